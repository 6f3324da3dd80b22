// Must not compile: a plain callable that takes the answer itself, not its outcome. The
// facade says what to write instead (the test checks the compiler's output for it).
#include "cudactor/facade/stream.hpp"

void wrong(cudactor::stream& s) {
  s.synchronize([](cudactor::completion) {});
}
