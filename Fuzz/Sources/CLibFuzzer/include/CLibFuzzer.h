#ifndef CLIBFUZZER_H
#define CLIBFUZZER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver for programs that have their own `main` (compiler-rt's FuzzerInterface.h).
/// SwiftPM gives every executable its own entry point, so the fuzz targets call this instead of
/// relying on the `main` inside libFuzzer.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
