//===- DeviceModel.cpp - Device and cluster models ---------------------------------===//
