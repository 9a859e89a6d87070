//===- NamedFactoryRegistry.h - Thread-safe name -> factory map -*- C++ -*-===//
//
// Schedule generators are looked up by name from a table that built-in
// kinds fill at start-up and out-of-tree code may extend at run time,
// possibly from several threads; this is that table.
//
//===----------------------------------------------------------------------===//

#ifndef PIPE_SUPPORT_NAMEDFACTORYREGISTRY_H
#define PIPE_SUPPORT_NAMEDFACTORYREGISTRY_H

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace mlir::pipe {

/// Factories of `T` by name, guarded by a mutex.
template <typename T> class NamedFactoryRegistry {
public:
  using Factory = std::function<std::unique_ptr<T>()>;

  /// Returns false (and keeps the old factory) when the name is taken.
  bool add(llvm::StringRef name, Factory factory) {
    std::lock_guard<std::mutex> lock(mutex);
    return factories.try_emplace(name, std::move(factory)).second;
  }

  /// A new object from the factory named `name`, or null.
  std::unique_ptr<T> create(llvm::StringRef name) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = factories.find(name);
    return it == factories.end() ? nullptr : it->second();
  }

  /// Registered names, sorted.
  llvm::SmallVector<std::string> getNames() {
    std::lock_guard<std::mutex> lock(mutex);
    llvm::SmallVector<std::string> names;
    for (const auto &entry : factories)
      names.push_back(entry.getKey().str());
    llvm::sort(names);
    return names;
  }

private:
  std::mutex mutex;
  llvm::StringMap<Factory> factories;
};

} // namespace mlir::pipe

#endif // PIPE_SUPPORT_NAMEDFACTORYREGISTRY_H
