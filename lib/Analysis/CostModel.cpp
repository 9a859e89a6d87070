//===- CostModel.cpp - Block cost model ---------------------------------===//
