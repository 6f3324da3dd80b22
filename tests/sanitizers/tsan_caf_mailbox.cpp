// What CAF's mailboxes guarantee, told to ThreadSanitizer: putting a message into an actor's
// mailbox happens before the actor handles it.
//
// Debian's libcaf 0.17.6 is not instrumented and its mailboxes are lock-free, so TSan sees no
// ordering between a sender and the receiver: whatever a thread wrote before it sent (a
// device worker's output, then the poller's progress message, then an answer) looks, to
// TSan, like a race with the thread that reads it after the answer. This library is
// preloaded (LD_PRELOAD, set by tests/CMakeLists.txt) into every process of `make tsan` and
// interposes the exported functions every message passes through: the enqueue of scheduled
// and blocking actors (release, keyed on the message) and the visitor that hands a message
// to the actor's handlers (acquire on the same key). Nothing else changes: each call goes on
// to CAF's own function. The key is the message's own address, so each message orders
// exactly its sender and its receiver, nothing wider (TSan drops the key when the message is
// freed).
//
// The signatures are the Itanium C++ ABI of CAF 0.17.6's members, written out: `this` first;
// a `std::unique_ptr` argument (not trivially copyable) is passed as the address of the
// caller's object, whose first word is the pointer; `intrusive::task_result` is an int-sized
// enum. Each is looked up in CAF at its first call (a process without CAF, like the compiler
// the install test runs, never calls them); a name CAF lacks aborts with a message.

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

// TSan's annotations, weak: a process without the TSan runtime (a compiler the install test
// runs) loads this library too, and there they are null and nothing is annotated.
extern "C" {
void __tsan_acquire(void* addr) __attribute__((weak));
void __tsan_release(void* addr) __attribute__((weak));
}

namespace {

void acquired(void* element) {
  if (__tsan_acquire != nullptr && element != nullptr) __tsan_acquire(element);
}

void* next_definition(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "tsan_caf_mailbox: %s not found in CAF: %s\n", name, dlerror());
    std::abort();
  }
  return f;
}

void released(void* element_slot) {
  void* element = *static_cast<void**>(element_slot);
  if (__tsan_release != nullptr && element != nullptr) __tsan_release(element);
}

using enqueue_fn = void (*)(void* self, void* element_slot, void* unit);
using visit_fn = int (*)(void* visitor, void* element);

#define SCHEDULED_ENQUEUE \
  "_ZN3caf15scheduled_actor7enqueueESt10unique_ptrINS_15mailbox_elementENS_6detail8disposerEEPNS_14execution_unitE"
#define BLOCKING_ENQUEUE \
  "_ZN3caf14blocking_actor7enqueueESt10unique_ptrINS_15mailbox_elementENS_6detail8disposerEEPNS_14execution_unitE"
#define SCHEDULED_VISIT "_ZN3caf15scheduled_actor15mailbox_visitorclERNS_15mailbox_elementE"
#define BLOCKING_VISIT "_ZN3caf14blocking_actor15mailbox_visitorclERNS_15mailbox_elementE"

}  // namespace

void scheduled_enqueue(void* self, void* element_slot, void* unit) __asm__(SCHEDULED_ENQUEUE);
void blocking_enqueue(void* self, void* element_slot, void* unit) __asm__(BLOCKING_ENQUEUE);
int scheduled_visit(void* visitor, void* element) __asm__(SCHEDULED_VISIT);
int blocking_visit(void* visitor, void* element) __asm__(BLOCKING_VISIT);

void scheduled_enqueue(void* self, void* element_slot, void* unit) {
  static const auto next = reinterpret_cast<enqueue_fn>(next_definition(SCHEDULED_ENQUEUE));
  released(element_slot);
  next(self, element_slot, unit);
}

void blocking_enqueue(void* self, void* element_slot, void* unit) {
  static const auto next = reinterpret_cast<enqueue_fn>(next_definition(BLOCKING_ENQUEUE));
  released(element_slot);
  next(self, element_slot, unit);
}

int scheduled_visit(void* visitor, void* element) {
  static const auto next = reinterpret_cast<visit_fn>(next_definition(SCHEDULED_VISIT));
  acquired(element);
  return next(visitor, element);
}

int blocking_visit(void* visitor, void* element) {
  static const auto next = reinterpret_cast<visit_fn>(next_definition(BLOCKING_VISIT));
  acquired(element);
  return next(visitor, element);
}
