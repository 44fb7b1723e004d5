"""A run of repro-audit's own engine, read back so that a PyTorch script can start where it started
(docs/pytorch.md, "Cross-check with the engine"): its spec and parameter names (the trace's
header), its initial weights (`run-NNN/weights-initial.safetensors`) and its batch order
(`run-NNN/batches.json`, written by `run --save-batches`). A PyTorch run that loads these and
records with the engine's names and spec gives a trace `repro-audit compare` lines up with the
engine's: the report says where the two implementations part.
"""
from typing import Any, Dict
import json
import os
import struct

import numpy


def read_safetensors(path: Any) -> Any:
    """{name: float32 numpy array} of a safetensors file (F32 tensors only, as the engine
    writes); ValueError naming the file when it is not one."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its header length)")
    (length,) = struct.unpack("<Q", data[:8])
    if 8 + length > len(data):
        raise ValueError(f"{path}: header length {length} runs past the end of the file")
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info.get("dtype") != "F32":
            raise ValueError(f"{path}: tensor {name} is {info.get('dtype')}, not F32")
        begin, end = info["data_offsets"]
        array = numpy.frombuffer(body[begin:end], dtype="<f4").reshape(info["shape"])
        tensors[name] = array.copy()
    return tensors


class EngineRun:
    """Run `run` of the engine's audit folder `folder` (made with --save-batches)."""

    def __init__(self, folder: Any, run: Any = 0) -> None:
        self.folder = folder
        stem = os.path.join(folder, "run-%03d" % run)
        with open(stem + ".trace.jsonl", encoding="utf-8") as f:
            self.header = json.loads(f.readline())
        self.spec = self.header["spec"]
        self.param_names = [p["name"] for p in self.header["params"]]
        self.param_shapes = [tuple(p["shape"]) for p in self.header["params"]]
        self.initial_weights = read_safetensors(os.path.join(stem, "weights-initial.safetensors"))
        batches = os.path.join(stem, "batches.json")
        if not os.path.exists(batches):
            raise ValueError(f"{batches}: missing; make the engine's audit with --save-batches")
        with open(batches, encoding="utf-8") as f:
            self.steps = json.load(f)["steps"]  # [{"step", "epoch", "indices"}], in order

    def dropout_rates(self) -> Any:
        """The rates of the spec's dropout layers, in order."""
        return [layer["rate"] for layer in self.spec["model"]["layers"]
                if layer["type"] == "dropout"]

    def load_initial_weights(self, model: Any) -> Any:
        """Copies the engine's initial weights into `model`, whose parameters must be the
        engine's in order and shape (PyTorch's conv [K, C, R, S] and dense [out, in] layouts are
        the engine's); returns the engine's names, in that order, for the recorder."""
        import torch

        params = list(model.parameters())
        if len(params) != len(self.param_names):
            raise ValueError(f"the model has {len(params)} parameters, the engine's run "
                             f"{len(self.param_names)}")
        with torch.no_grad():
            for p, name, shape in zip(params, self.param_names, self.param_shapes):
                if tuple(p.shape) != shape:
                    raise ValueError(f"{name}: the engine's shape {list(shape)}, the model's "
                                     f"{list(p.shape)}")
                p.copy_(torch.from_numpy(self.initial_weights[name]))
        return list(self.param_names)

    def layer_names(self, sequential: Any, path: str = "model") -> Dict[str, str]:
        """The engine's layer names of the modules of `sequential` (an nn.Sequential built as the
        spec's layers, at `path` in the recorded model), for the recorder's `layers=`
        (op_places.py): each spec layer is the next module of its kind, and a layer with an
        activation also the activation module after it, whose op the engine fuses into the
        layer's. The records of both programs then name one layer alike (docs/equivalence.md,
        "The engine against PyTorch"). ValueError naming the first module that is not the spec's
        next layer."""
        kinds = {"conv2d": "Conv2d", "dense": "Linear", "maxpool2d": "MaxPool2d",
                 "dropout": "Dropout", "flatten": "Flatten", "batchnorm": "BatchNorm2d"}
        activations = {"relu": "ReLU", "tanh": "Tanh", "sigmoid": "Sigmoid"}
        modules = list(sequential.named_children())
        names: Dict[str, str] = {}
        position = 0

        def take(kind: str, layer: str) -> None:
            nonlocal position
            found = type(modules[position][1]).__name__ if position < len(modules) else "nothing"
            if found != kind:
                raise ValueError(f"{path}.{position}: {found} where the spec's layer {layer} is a "
                                 f"{kind}: build the model as the spec's layers, in order")
            names[f"{path}.{modules[position][0]}"] = layer
            position += 1

        for layer in self.spec["model"]["layers"]:
            if layer["type"] not in kinds:
                raise ValueError(f"layer {layer['name']}: no PyTorch module stands for a "
                                 f"{layer['type']} layer here")
            take(kinds[layer["type"]], layer["name"])
            activation = layer.get("activation", "none")
            if activation != "none":
                if activation not in activations:
                    raise ValueError(f"layer {layer['name']}: activation {activation} has no "
                                     "PyTorch module here")
                take(activations[activation], layer["name"])
        if position != len(modules):
            raise ValueError(f"{path}.{modules[position][0]}: a module after the spec's last "
                             "layer")
        return names
