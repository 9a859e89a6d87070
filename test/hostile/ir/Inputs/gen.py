#!/usr/bin/env python3
"""Writes hostile MLIR inputs for the tools' guards: gen.py KIND > FILE."""

import sys

FORWARD = """func.func @forward(%%x: %s) -> tensor<f32> {
  %%c = arith.constant dense<0.0> : tensor<f32>
  return %%c : tensor<f32>
}
"""


def deep(n):
    return ("func.func @forward() {\n" + "scf.execute_region {\n" * n
            + "scf.yield\n}\n" * n + "return\n}\n")


def alias_bomb(n):
    lines = ["#a0 = [1]"] + ["#a%d = [#a%d, #a%d]" % (i, i - 1, i - 1)
                             for i in range(1, n)]
    return "\n".join(lines) + "\n" + (
        "func.func @forward() attributes {a = #a%d} {\n  return\n}\n" % (n - 1))


def resource(alignment_hex):
    return ("func.func @forward() -> tensor<2xf32> {\n"
            "  %c = arith.constant dense_resource<blob> : tensor<2xf32>\n"
            "  return %c : tensor<2xf32>\n}\n"
            "{-#\n  dialect_resources: {\n    builtin: {\n"
            "      blob: \"0x" + alignment_hex + "0000803F00000040\"\n"
            "    }\n  }\n#-}\n")


KINDS = {
    "deep-regions": lambda: deep(20000),
    "alias-bomb": lambda: alias_bomb(80),
    "nul": lambda: "func.func @forward() {\n  return\n}\n\0junk\n",
    "resource-align-0": lambda: resource("00000000"),
    "resource-align-3": lambda: resource("03000000"),
    "resource-align-4": lambda: resource("04000000"),
    "resource-truncated": lambda: resource("04000000")[:-30],
    # Shapes: element counts past int64, and sizes past the 64 GiB budget.
    "arg-overflow": lambda: FORWARD % "tensor<4294967296x4294967296x2xf32>",
    "arg-over-budget": lambda: FORWARD % "tensor<4294967296x5xf32>",
    "arg-at-budget": lambda: FORWARD % "tensor<4294967296x4xf32>",
    "empty-over-budget": lambda: (
        "func.func @forward() -> tensor<f32> {\n"
        "  %e = tensor.empty() : tensor<65536x65536x8xf32>\n"
        "  %c = arith.constant dense<0.0> : tensor<f32>\n"
        "  return %c : tensor<f32>\n}\n"),
    "constant-overflow": lambda: (
        "func.func @forward() -> tensor<f32> {\n"
        "  %w = arith.constant dense<1.0> : "
        "tensor<9223372036854775807x2xf32>\n"
        "  %c = arith.constant dense<0.0> : tensor<f32>\n"
        "  return %c : tensor<f32>\n}\n"),
    "reshape-mismatch": lambda: (
        "func.func @forward(%x: tensor<6xf32>) -> tensor<3x2xf32> {\n"
        "  %s = arith.constant dense<[2, 3]> : tensor<2xi64>\n"
        "  %r = tensor.reshape %x(%s) : (tensor<6xf32>, tensor<2xi64>) -> "
        "tensor<3x2xf32>\n"
        "  return %r : tensor<3x2xf32>\n}\n"),
}

if __name__ == "__main__":
    sys.stdout.write(KINDS[sys.argv[1]]())
