"""Exact rewrites of an ONNX graph that onnxruntime's own optimiser leaves undone.

PP-OCRv4's models (rapidocr's detector and recogniser) were exported from Paddle with
every activation spelled out in elementwise nodes: a convolution is followed by a scalar
affine (``y * a + b``, PP-LCNetV3's "learnable affine block"), a hard-swish written as four
nodes (``x * clip(x + 3, 0, 6) / 6``), another scalar affine, and only then the next
convolution. onnxruntime fuses none of them, and on one core they cost about a third of
the recogniser's time (measured with onnxruntime's profiler on a 48×960 line: Mul 10 %,
Add 8 %, Div 6 %, Clip 4 %, beside Conv's 60 %). ``fold`` rewrites:

* a scalar affine after a convolution into the convolution (``W·a``, ``B·a + b``);
* a scalar affine before a convolution into its weights: ``conv(c·x) = (c·W)·x``, zero
  padding included; a shift ``d`` into its bias (``+ d·ΣW``) where the convolution has no
  padding, and where it has (at a padded border the shift would meet the padding's
  zeros), ``conv(c·x + d) = (c·W)(x + d/c)``: one Add left of the two nodes;
* ``x * clip(x + 3, 0, 6) / 6`` into ``x * HardSigmoid(x)`` (alpha 1/6, beta 1/2), two
  nodes for four.

Each is the same arithmetic up to float rounding; the tests compare the rewritten models'
outputs with the originals'. A pattern is rewritten only where each intermediate value has
one consumer, so nothing else in the graph sees a changed tensor.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import onnx


class _Graph:
    """The graph's nodes in order, with their producers, consumers and constant values."""

    def __init__(self, model: onnx.ModelProto) -> None:
        from onnx import numpy_helper

        self.graph = model.graph
        self.nodes: list[Any] = list(self.graph.node)
        self.values: dict[str, Any] = {
            i.name: numpy_helper.to_array(i) for i in self.graph.initializer
        }
        for node in self.nodes:
            if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
                self.values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
        self.counter = 0
        self.index()

    def index(self) -> None:
        self.producer: dict[str, Any] = {}
        self.consumers: dict[str, list[Any]] = defaultdict(list)
        for node in self.nodes:
            for name in node.output:
                self.producer[name] = node
            for name in node.input:
                self.consumers[name].append(node)
        for output in self.graph.output:
            self.consumers[output.name].append(None)  # a graph output is a consumer too

    def replace(self, node: Any, new: list[Any], gone: tuple[Any, ...] = ()) -> None:
        """``new`` in ``node``'s place, the nodes of ``gone`` removed."""
        at = next(i for i, n in enumerate(self.nodes) if n is node)
        self.nodes[at : at + 1] = new
        self.nodes = [n for n in self.nodes if all(n is not g for g in gone)]
        self.index()

    def scalar(self, name: str) -> float | None:
        """The value of a constant of one element and at most one axis (a constant of
        more axes could still widen the shape it is broadcast against)."""
        value = self.values.get(name)
        if value is None or value.size != 1 or value.ndim > 1:
            return None
        return float(value.reshape(-1)[0])

    def only_consumer(self, name: str, op_type: str) -> Any:
        users = self.consumers.get(name, [])
        if len(users) == 1 and users[0] is not None and users[0].op_type == op_type:
            return users[0]
        return None

    def affine(self, node: Any, op_type: str) -> tuple[str, float] | None:
        """(the other input, the scalar) of a Mul or Add node with one scalar input."""
        if node is None or node.op_type != op_type or len(node.input) != 2:
            return None
        first, second = node.input
        if (value := self.scalar(second)) is not None and first not in self.values:
            return first, value
        if (value := self.scalar(first)) is not None and second not in self.values:
            return second, value
        return None

    def constant(self, array: Any, hint: str) -> str:
        from onnx import numpy_helper

        self.counter += 1
        name = f"{hint}__folded{self.counter}"
        self.graph.initializer.append(numpy_helper.from_array(array, name))
        self.values[name] = array
        return name

    def conv_weights(self, conv: Any) -> tuple[Any, Any] | None:
        import numpy as np

        weights = self.values.get(conv.input[1])
        if weights is None or weights.ndim != 4:
            return None
        if len(conv.input) > 2 and conv.input[2]:
            bias = self.values.get(conv.input[2])
            if bias is None:
                return None
        else:
            bias = np.zeros(weights.shape[0], dtype=weights.dtype)
        return weights, bias

    def conv(self, like: Any, source: str, weights: Any, bias: Any, output: str) -> Any:
        """A copy of the convolution ``like`` reading ``source`` into ``output``."""
        import onnx

        inputs = [
            source,
            self.constant(weights, like.input[1]),
            self.constant(bias.astype(weights.dtype), f"{like.input[1]}_b"),
        ]
        node = onnx.helper.make_node("Conv", inputs, [output], name=f"{like.name or output}_f")
        node.attribute.extend(like.attribute)
        return node


def _pads(conv: Any) -> bool:
    for attribute in conv.attribute:
        if attribute.name == "pads" and any(attribute.ints):
            return True
        if attribute.name == "auto_pad" and attribute.s not in (b"", b"NOTSET", b"VALID"):
            return True
    return False


def _fold_affine_after_conv(g: _Graph) -> int:
    """Conv → Mul(a) [→ Add(b)] becomes one Conv."""
    folded = 0
    for conv in list(g.nodes):
        if conv.op_type != "Conv" or (pair := g.conv_weights(conv)) is None:
            continue
        mul = g.only_consumer(conv.output[0], "Mul")
        scaled = g.affine(mul, "Mul")
        if scaled is None or scaled[0] != conv.output[0]:
            continue
        weights, bias = pair
        scale = scaled[1]
        shift, last = 0.0, mul
        add = g.only_consumer(mul.output[0], "Add")
        shifted = g.affine(add, "Add")
        if shifted is not None and shifted[0] == mul.output[0]:
            shift, last = shifted[1], add
        new = g.conv(conv, conv.input[0], weights * scale, bias * scale + shift, last.output[0])
        g.replace(conv, [new], gone=(mul, last))
        folded += 1
    return folded


def _fold_affine_before_conv(g: _Graph) -> int:
    """Mul(c) [→ Add(d)] → Conv becomes one Conv, or Add(d/c) → Conv where it pads."""
    import numpy
    import onnx

    folded = 0
    for mul in list(g.nodes):
        scaled = g.affine(mul, "Mul")
        if scaled is None:
            continue
        source, scale = scaled
        add = g.only_consumer(mul.output[0], "Add")
        shifted = g.affine(add, "Add")
        if shifted is not None and shifted[0] == mul.output[0]:
            conv = g.only_consumer(add.output[0], "Conv")
            if conv is None or conv.input[0] != add.output[0]:
                continue
            pair = g.conv_weights(conv)
            if pair is None or (_pads(conv) and scale == 0.0):
                continue
            weights, bias = pair
            shift = shifted[1]
            if _pads(conv):
                # conv(c·x + d) = (c·W)(x + d/c), the padding's zeros included
                moved = f"{add.output[0]}__shifted"
                plus = onnx.helper.make_node(
                    "Add",
                    [source, g.constant(numpy.array(shift / scale, dtype=weights.dtype), "shift")],
                    [moved],
                    name=moved,
                )
                new = g.conv(conv, moved, weights * scale, bias, conv.output[0])
                g.replace(conv, [plus, new], (mul, add))
            else:
                bias = bias + shift * weights.sum(axis=(1, 2, 3))
                new = g.conv(conv, source, weights * scale, bias, conv.output[0])
                g.replace(conv, [new], (mul, add))
        else:
            conv = g.only_consumer(mul.output[0], "Conv")
            if conv is None or conv.input[0] != mul.output[0]:
                continue
            pair = g.conv_weights(conv)
            if pair is None:
                continue
            weights, bias = pair
            g.replace(conv, [g.conv(conv, source, weights * scale, bias, conv.output[0])], (mul,))
        folded += 1
    return folded


def _fuse_hard_swish(g: _Graph) -> int:
    """``x * clip(x + 3, 0, 6) / 6`` becomes ``x * HardSigmoid(x)``."""
    import onnx

    fused = 0
    for clip in list(g.nodes):
        if clip.op_type != "Clip" or len(clip.input) != 3:
            continue
        if g.scalar(clip.input[1]) != 0.0 or g.scalar(clip.input[2]) != 6.0:
            continue
        plus = g.affine(g.producer.get(clip.input[0]), "Add")
        if plus is None or plus[1] != 3.0:
            continue
        add = g.producer[clip.input[0]]
        x = plus[0]
        mul = g.only_consumer(clip.output[0], "Mul")
        if mul is None or x not in mul.input or len(g.consumers[add.output[0]]) != 1:
            continue
        div = g.only_consumer(mul.output[0], "Div")
        if div is None or div.input[0] != mul.output[0] or g.scalar(div.input[1]) != 6.0:
            continue
        gate = f"{div.output[0]}__hardsigmoid"
        new = [
            onnx.helper.make_node("HardSigmoid", [x], [gate], alpha=1.0 / 6.0, beta=0.5, name=gate),
            onnx.helper.make_node("Mul", [x, gate], list(div.output), name=f"{gate}_mul"),
        ]
        g.replace(div, new, gone=(add, clip, mul))
        fused += 1
    return fused


def fold(model: onnx.ModelProto) -> dict[str, int]:
    """Rewrite ``model`` in place; how many of each rewrite were made."""
    outputs = {output.name for output in model.graph.output}
    read_before = {name for node in model.graph.node for name in node.input} | outputs
    unread_before = _constants(model.graph, model.graph.node) - read_before
    g = _Graph(model)
    counts = {
        "affine_after_conv": _fold_affine_after_conv(g),
        "affine_before_conv": _fold_affine_before_conv(g),
        "hard_swish": _fuse_hard_swish(g),
    }
    # the constants the rewrites left unread go (the model's, and those one rewrite wrote
    # and a later one folded again); what nothing read before is not touched
    read_after = {name for node in g.nodes for name in node.input} | outputs
    stale = _constants(model.graph, g.nodes) - read_after - unread_before
    kept = [n for n in g.nodes if n.op_type != "Constant" or n.output[0] not in stale]
    del model.graph.node[:]
    model.graph.node.extend(kept)
    initializers = [i for i in model.graph.initializer if i.name not in stale]
    del model.graph.initializer[:]
    model.graph.initializer.extend(initializers)
    return counts


def _constants(graph: Any, nodes: Any) -> set[str]:
    """The names of ``graph``'s initializers and of the outputs of ``nodes``' Constants."""
    return {i.name for i in graph.initializer} | {
        output for node in nodes if node.op_type == "Constant" for output in node.output
    }
