#!/usr/bin/env python3
"""Prints a pipe.param whose attribute nests N arrays deep (for corpus.mlir)."""
import sys

n = int(sys.argv[1])
print("pipe.param @w : tensor<4xf32> {a = " + "[" * n + "]" * n + "}")
