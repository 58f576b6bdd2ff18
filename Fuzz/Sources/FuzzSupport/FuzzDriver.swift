import CLibFuzzer

#if canImport(Glibc)
import Glibc
#endif

/// The `main` of every fuzz target: hands the command line (libFuzzer's flags, corpus folders)
/// and the target's test function to libFuzzer, and exits with its status.
public enum FuzzDriver {
    public typealias TestOneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

    public static func run(_ test: TestOneInput) -> Never {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, test))
    }
}
