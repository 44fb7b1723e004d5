"""Where an aten op ran, as an op record's `layer` names it (docs/pytorch.md, "Op records"):

- in a module's forward: the module's path, "model.features.3" (the innermost module running);
- in the backward pass: the module whose forward made the gradient being propagated. A hook on
  each module output's gradient says when the backward reaches the module (it fires just before the
  output's own backward node runs), a hook on each input's gradient when it has left it; before the
  first module (the loss's backward, when the loss is no module) it is "autograd";
- in optimizer.step or optimizer.zero_grad: "optimizer";
- anywhere else (moving the batch, a loss function called outside any module): "script".

A module's path may be renamed (`layers`, record()'s keyword): {"model.0": "conv2d_0", "model.1":
"conv2d_0"} records the ops of both modules as the layer conv2d_0, as another program names it
(the engine's layers: docs/equivalence.md, "The engine against PyTorch"). Only the names change:
where an op ran is found by the modules' paths as before.

Hooks are in place only while ops are recorded (the window's steps): outside it nothing of this
runs. The backward pass is known by wrapping torch.autograd.backward (what Tensor.backward calls)
and torch.autograd.grad for as long.
"""
from typing import Any, Dict, Mapping, Optional
import functools


def module_paths(model: Any) -> Any:
    """The paths of the model's modules as records name them: "model", "model.features.3"."""
    return ["model" + ("." + name if name else "") for name, _ in model.named_modules()]


def checked_layers(model: Any, layers: Optional[Mapping[str, str]]) -> Dict[str, str]:
    """`layers` (module path -> the layer name its ops are recorded under) as a dict; ValueError
    naming the first paths that are no module of the model, or a name that is no non-empty
    string."""
    if layers is None:
        return {}
    paths = module_paths(model)
    unknown = [p for p in layers if p not in paths]
    if unknown:
        shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5
                                          else "")
        raise ValueError(f"repro_audit: layers= renames {shown}, not a module of the model (its "
                         f"modules: {', '.join(paths[:8])}{', ...' if len(paths) > 8 else ''})")
    for path, name in layers.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"repro_audit: layers= gives {path} the name {name!r}: a layer name "
                             "is a non-empty string")
    return dict(layers)


class OpPlaces:
    """Tracks the place (see the module's documentation) of the op running now."""

    def __init__(self, torch: Any, model: Any, optimizer: Any,
                 layers: Optional[Mapping[str, str]] = None) -> None:
        self._torch = torch
        self._modules = list(zip(module_paths(model), (m for _, m in model.named_modules())))
        self._layers = checked_layers(model, layers)  # a module's path -> its recorded name
        self._optimizer = optimizer
        self._handles: Any = []
        self._patched: Any = []
        self._forward: Any = []  # the paths of the modules whose forward is running, innermost last
        self._backward: Optional[str] = None  # the module the backward is in; None: none yet
        self._in_backward = 0
        self._in_optimizer = 0
        self._token = object()  # marks the tensors hooked in this window's step

    def current(self) -> Any:
        if self._in_optimizer:
            return "optimizer"
        if self._in_backward:
            return self._named(self._backward) if self._backward else "autograd"
        if self._forward:
            return self._named(self._forward[-1])
        return "script"

    def _named(self, path: str) -> str:
        return self._layers.get(path, path)

    # --- hooks ---

    def _tensors(self, value: Any) -> Any:
        from torch.utils._pytree import tree_flatten
        return [t for t in tree_flatten(value)[0]
                if isinstance(t, self._torch.Tensor) and t.requires_grad]

    def _pre_forward(self, path: Any) -> Any:
        def hook(module: Any, inputs: Any) -> None:
            self._forward.append(path)
            for t in self._tensors(inputs):
                parent = self._forward[-2] if len(self._forward) > 1 else None
                t.register_hook(functools.partial(self._left, path, parent))
        return hook

    def _post_forward(self, path: Any) -> Any:
        def hook(module: Any, inputs: Any, output: Any) -> None:
            if self._forward and self._forward[-1] == path:
                self._forward.pop()
            for t in self._tensors(output):
                # The same tensor may leave several modules (a Sequential's output is its last
                # child's): the innermost, which hooks it first, keeps it.
                if getattr(t, "_repro_audit_place", None) is self._token:
                    continue
                t._repro_audit_place = self._token
                t.register_hook(functools.partial(self._entered, path))
        return hook

    def _entered(self, path: Any, grad: Any) -> None:
        self._backward = path

    def _left(self, path: Any, parent: Any, grad: Any) -> None:
        # Fires with the gradient of the module's input, i.e. after its backward; the module that
        # made that input (hooked on the same tensor, earlier) has already said it is next.
        if self._backward == path:
            self._backward = parent

    # --- phases ---

    def _wrap(self, owner: Any, name: Any, enter_attr: Any) -> None:
        original = getattr(owner, name)
        had_own = name in getattr(owner, "__dict__", {})

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            setattr(self, enter_attr, getattr(self, enter_attr) + 1)
            if enter_attr == "_in_backward":
                saved, self._backward = self._backward, None
            try:
                return original(*args, **kwargs)
            finally:
                setattr(self, enter_attr, getattr(self, enter_attr) - 1)
                if enter_attr == "_in_backward":
                    self._backward = saved

        setattr(owner, name, wrapper)
        self._patched.append((owner, name, original, had_own))

    def start(self) -> None:
        """Puts the hooks in place (at the start of a recorded step)."""
        self._token = object()
        self._forward, self._backward = [], None
        for path, module in self._modules:
            self._handles.append(module.register_forward_pre_hook(self._pre_forward(path)))
            self._handles.append(module.register_forward_hook(self._post_forward(path)))
        autograd = self._torch.autograd
        self._wrap(autograd, "backward", "_in_backward")
        self._wrap(autograd, "grad", "_in_backward")
        if self._optimizer is not None:
            self._wrap(self._optimizer, "step", "_in_optimizer")
            self._wrap(self._optimizer, "zero_grad", "_in_optimizer")

    def stop(self) -> None:
        """Takes every hook and wrapper away again, restoring what was there."""
        for h in self._handles:
            h.remove()
        self._handles = []
        for owner, name, original, had_own in reversed(self._patched):
            if had_own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)  # the class's method shows through again
        self._patched = []
