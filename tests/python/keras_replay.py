"""The Keras convnet's spec as the PyTorch replay of an engine run takes it (docs/pytorch.md,
"Cross-check with the engine"): configs/keras-mnist-fashion.json on the CPU, one thread, a few
steps of 64 samples, no evaluation, dropout rates 0 (PyTorch draws its own masks: without dropout
nothing is drawn)."""
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def keras_replay_spec(name: str, steps: int, limit: int) -> dict:
    with open(os.path.join(ROOT, "configs", "keras-mnist-fashion.json"), encoding="utf-8") as f:
        spec = json.load(f)
    spec.update(name=name, device="cpu", threads=1, train={"epochs": 1, "max_steps": steps})
    spec["data"]["train"]["limit"] = limit
    spec["data"]["batch_size"] = 64
    del spec["data"]["eval"]
    for layer in spec["model"]["layers"]:
        if layer["type"] == "dropout":
            layer["rate"] = 0.0
    return spec
