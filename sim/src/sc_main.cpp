// Debian's libsystemc.so defines a main() that calls sc_main, so every program linking it
// needs an sc_main, even though vtpu's tools and tests have their own main and drive the
// kernel through vtpu::sim::simulate. This one only satisfies the linker.
//
// It is an archive member of its own, pulled in by the `--undefined=sc_main` that vtpu_sim
// gives its consumers (sim/CMakeLists.txt): the undefined reference comes from a shared
// library, which the linker sees after the static archives and never makes it go back to
// them, so an sc_main sitting in an object the program needs for something else (as it
// once did, in chip.cpp) is linked in only by luck. Programs with their own sc_main keep it.
#include <sysc/kernel/sc_externs.h>  // declares it extern "C", the name libsystemc.so looks for

int sc_main(int, char**) { return 3; }
