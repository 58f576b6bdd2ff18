/// What every fuzz target shares: the input as bytes, and invariant checks that crash (so libFuzzer
/// stops, reports and saves the input) when the code under test breaks a promise without crashing.
public enum FuzzCheck {
    /// libFuzzer's buffer as an array (nil with size 0 is the empty input).
    public static func bytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
        guard let data, size > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: size))
    }

    /// Stops the run when an invariant does not hold.
    public static func require(_ condition: Bool, _ message: @autoclosure () -> String,
                               file: StaticString = #fileID, line: UInt = #line) {
        if !condition { fatalError("invariant broken: \(message())", file: file, line: line) }
    }
}
