//===- ScheduleGenerator.cpp - Schedule generators ---------------------------------===//
