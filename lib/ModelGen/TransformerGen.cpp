//===- TransformerGen.cpp - Transformer model generator ---------------------------------===//
