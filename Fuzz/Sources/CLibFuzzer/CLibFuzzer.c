// The declaration is all: libFuzzer itself is linked in by `-sanitize=fuzzer`.
#include "CLibFuzzer.h"
