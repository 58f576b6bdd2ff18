/// A configuration problem, always naming the key or environment variable at fault.
public struct ConfigError: Error, CustomStringConvertible, Equatable {
    public let key: String
    public let message: String

    public init(key: String, message: String) {
        self.key = key
        self.message = message
    }

    public var description: String { "configuration error: \(key): \(message)" }
}
