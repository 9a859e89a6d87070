//===- Safetensors.cpp - Safetensors reader and writer ---------------------------------===//
