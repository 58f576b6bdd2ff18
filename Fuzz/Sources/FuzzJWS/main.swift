runFuzzer()
