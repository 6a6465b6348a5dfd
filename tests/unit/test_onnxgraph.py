"""The exact rewrites of ``runtime.onnxgraph.fold``: the same outputs, fewer nodes."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from vsr_extproc.runtime.onnxgraph import fold

RNG = np.random.default_rng(7)


def _const(name: str, value: Any) -> onnx.NodeProto:
    array = np.asarray(value, dtype=np.float32)
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(array, name))


def _block(prefix: str, source: str, channels: int, kernel: int, group: int = 1) -> list[Any]:
    """Paddle's export of a PP-LCNetV3 block: Conv, affine, hard-swish in four nodes,
    affine — the weights as Constant nodes, as in rapidocr's models."""
    pad = kernel // 2
    weights = RNG.normal(size=(channels, channels // group, kernel, kernel)) * 0.3
    return [
        _const(f"{prefix}w", weights),
        _const(f"{prefix}b", RNG.normal(size=channels) * 0.1),
        helper.make_node(
            "Conv",
            [source, f"{prefix}w", f"{prefix}b"],
            [f"{prefix}conv"],
            kernel_shape=[kernel, kernel],
            pads=[pad] * 4,
            group=group,
        ),
        _const(f"{prefix}a", 1.7),
        helper.make_node("Mul", [f"{prefix}a", f"{prefix}conv"], [f"{prefix}scaled"]),
        _const(f"{prefix}s", -0.4),
        helper.make_node("Add", [f"{prefix}scaled", f"{prefix}s"], [f"{prefix}x"]),
        _const(f"{prefix}three", 3.0),
        helper.make_node("Add", [f"{prefix}x", f"{prefix}three"], [f"{prefix}x3"]),
        _const(f"{prefix}zero", 0.0),
        _const(f"{prefix}six", 6.0),
        helper.make_node("Clip", [f"{prefix}x3", f"{prefix}zero", f"{prefix}six"], [f"{prefix}c"]),
        helper.make_node("Mul", [f"{prefix}x", f"{prefix}c"], [f"{prefix}m"]),
        helper.make_node("Div", [f"{prefix}m", f"{prefix}six"], [f"{prefix}hs"]),
        _const(f"{prefix}k", 0.6),
        helper.make_node("Mul", [f"{prefix}k", f"{prefix}hs"], [f"{prefix}k_out"]),
        _const(f"{prefix}d", 0.09),
        helper.make_node("Add", [f"{prefix}k_out", f"{prefix}d"], [f"{prefix}out"]),
    ]


def _model(nodes: list[Any], output: str, channels: int = 4) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "blocks",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 6, 10])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return np.asarray(session.run(None, {"x": x})[0])


def _ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node if n.op_type != "Constant"]


def test_blocks_of_conv_affine_and_hard_swish_fold_to_the_same_outputs() -> None:
    # a padded depthwise 3×3, a 1×1 and a padded 3×3 conv, one after the other
    nodes = [
        *_block("p_", "x", 4, 3, group=4),
        *_block("q_", "p_out", 4, 1),
        *_block("r_", "q_out", 4, 3),
    ]
    model = _model(nodes, "r_out")
    x = RNG.normal(size=(1, 4, 6, 10)).astype(np.float32) * 2
    expected = _run(model, x)

    counts = fold(model)

    assert counts == {"affine_after_conv": 3, "affine_before_conv": 2, "hard_swish": 3}
    assert _ops(model) == [
        "Conv", "HardSigmoid", "Mul",  # p: scale and shift folded into the conv
        "Conv", "HardSigmoid", "Mul",  # q: 1×1, p's trailing affine folded in whole
        "Add", "Conv", "HardSigmoid", "Mul",  # r pads: q's shift stays, moved before it
        "Mul", "Add",  # r's trailing affine has no conv after it: left as it was
    ]  # fmt: skip
    np.testing.assert_allclose(_run(model, x), expected, rtol=1e-5, atol=1e-5)


def test_a_value_read_twice_is_not_folded_away() -> None:
    nodes = _block("p_", "x", 4, 1)
    # the conv's output is read by a second node: the affine after it must stay
    nodes.append(helper.make_node("Add", ["p_conv", "p_out"], ["both"]))
    model = _model(nodes, "both")
    x = RNG.normal(size=(1, 4, 6, 10)).astype(np.float32)
    expected = _run(model, x)

    counts = fold(model)

    assert counts["affine_after_conv"] == 0
    assert counts["hard_swish"] == 1
    assert "Clip" not in _ops(model)
    np.testing.assert_allclose(_run(model, x), expected, rtol=1e-5, atol=1e-5)


def test_a_graph_without_the_patterns_is_left_as_it_was() -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        # a constant nothing reads: not the rewrite's to remove
        initializer=[numpy_helper.from_array(np.ones(2, dtype=np.float32), "spare")],
    )
    model = helper.make_model(graph)
    before = model.SerializeToString()

    assert fold(model) == {"affine_after_conv": 0, "affine_before_conv": 0, "hard_swish": 0}
    assert model.SerializeToString() == before


@pytest.mark.models
@pytest.mark.parametrize(
    ("name", "shape"), [("ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 480)),
                        ("ch_PP-OCRv4_det_infer.onnx", (1, 3, 320, 480))],
)  # fmt: skip
def test_the_ocr_models_give_the_same_outputs_folded(name: str, shape: tuple[int, ...]) -> None:
    from importlib.resources import files

    path = files("rapidocr_onnxruntime") / "models" / name
    model = onnx.load(str(path))
    x = RNG.uniform(-1, 1, size=shape).astype(np.float32)
    expected = _run(model, x)

    counts = fold(model)

    assert counts["hard_swish"] >= 20
    assert counts["affine_after_conv"] >= 20
    assert "Clip" not in _ops(model)
    read = {name for node in model.graph.node for name in node.input}
    assert not [i.name for i in model.graph.initializer if i.name not in read]  # none left over
    folded = _run(model, x)
    np.testing.assert_allclose(folded, expected, rtol=1e-4, atol=1e-4)
    if name.startswith("ch_PP-OCRv4_rec"):  # the characters read: the same at every step
        assert (folded.argmax(-1) == expected.argmax(-1)).all()
