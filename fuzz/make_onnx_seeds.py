#!/usr/bin/python3
"""Writes fuzz_onnx's seeds for the nodes tunecnn's exporter never writes (fuzz/make_seeds.cpp
writes the rest): a Pad folded into a Conv, Constant and initializer inputs, Clip by inputs and by
attributes, Reshape, MatMul + Add, Identity, Dropout, and a final Softmax or LogSoftmax, at opset
13 and at opset 9 (whose Clip and Dropout take attributes). Each network imports in tunecnn; the
weights are small fixed numbers, so the files are a few hundred bytes and the same on every run.
Needs Debian's python3-onnx; run by hand: /usr/bin/python3 fuzz/make_onnx_seeds.py fuzz/corpus/onnx"""
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper


def floats(name, dims):
    count = 1
    for d in dims:
        count *= d
    return helper.make_tensor(name, TensorProto.FLOAT, dims, [((i * 7) % 11 - 5) / 10 for i in range(count)])


def model(nodes, initializers, opset, input_chw, output_width):
    graph = helper.make_graph(
        nodes, "seed",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", *input_chw])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", output_width])],
        initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    return m


def opset13_helpers():
    """Constant pads -> Pad -> Conv -> Clip(0, 6 as inputs) -> MaxPool -> Reshape -> MatMul -> Add
    -> Identity -> Dropout -> Softmax."""
    const = helper.make_node
    nodes = [
        const("Constant", [], ["pads"], value=helper.make_tensor("p", TensorProto.INT64, [8], [0, 0, 1, 1, 0, 0, 1, 1])),
        const("Pad", ["input", "pads"], ["padded"], mode="constant"),
        const("Conv", ["padded", "conv.weight", "conv.bias"], ["conv"], kernel_shape=[3, 3]),
        const("Clip", ["conv", "clip.min", "clip.max"], ["clipped"]),
        const("MaxPool", ["clipped"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2]),
        const("Constant", [], ["shape"], value=helper.make_tensor("s", TensorProto.INT64, [2], [0, -1])),
        const("Reshape", ["pooled", "shape"], ["features"]),
        const("MatMul", ["features", "fc.weight"], ["product"]),
        const("Add", ["product", "fc.bias"], ["logits"]),
        const("Identity", ["logits"], ["same"]),
        const("Constant", [], ["ratio"], value=helper.make_tensor("r", TensorProto.FLOAT, [], [0.25])),
        const("Dropout", ["same", "ratio"], ["dropped"]),
        const("Softmax", ["dropped"], ["output"], axis=1),
    ]
    weights = [floats("conv.weight", [3, 2, 3, 3]), floats("conv.bias", [3]),
               helper.make_tensor("clip.min", TensorProto.FLOAT, [], [0.0]),
               helper.make_tensor("clip.max", TensorProto.FLOAT, [], [6.0]),
               floats("fc.weight", [27, 4]), floats("fc.bias", [4])]
    return model(nodes, weights, 13, [2, 6, 6], 4)


def opset9_attributes():
    """Conv -> BatchNormalization -> Clip(min 0, max 6 as attributes) -> AveragePool (padded) ->
    Flatten -> Gemm (B not transposed) -> Dropout (ratio attribute) -> LogSoftmax."""
    node = helper.make_node
    nodes = [
        node("Conv", ["input", "conv.weight"], ["conv"], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["conv", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["bn"],
             epsilon=1e-3, momentum=0.8),
        node("Clip", ["bn"], ["clipped"], min=0.0, max=6.0),
        node("AveragePool", ["clipped"], ["pooled"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
        node("Flatten", ["pooled"], ["features"], axis=1),
        node("Gemm", ["features", "fc.weight", "fc.bias"], ["logits"], transB=0),
        node("Dropout", ["logits"], ["dropped"], ratio=0.5),
        node("LogSoftmax", ["dropped"], ["output"], axis=1),
    ]
    weights = [floats("conv.weight", [2, 1, 2, 2]), floats("bn.scale", [2]), floats("bn.bias", [2]),
               floats("bn.mean", [2]),
               helper.make_tensor("bn.var", TensorProto.FLOAT, [2], [0.5, 2.0]),
               floats("fc.weight", [2 * 3 * 3, 3]), floats("fc.bias", [3])]
    return model(nodes, weights, 9, [1, 4, 4], 3)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_onnx_seeds.py CORPUS_DIR (fuzz/corpus/onnx)")
    out = Path(sys.argv[1])
    for name, m in (("pad-constant-clip-matmul-softmax.onnx", opset13_helpers()),
                    ("opset9-attributes-gemm-logsoftmax.onnx", opset9_attributes())):
        (out / name).write_bytes(m.SerializeToString())
        print(f"{out / name}: {(out / name).stat().st_size} bytes")


if __name__ == "__main__":
    main()
