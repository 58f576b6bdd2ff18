/// Typed reads of one JSON object's fields, for a sender's models: an absent or null field is nil, a
/// field of the wrong type is an error of the sender's own kind (made by `failure` from a message that
/// names the field's path), never silently nil.
public struct JSONFields<Failure: Error> {
    public let object: [String: JSONValue]
    public let path: String
    private let failure: (String) -> Failure

    /// Fails when `value` is not an object.
    public init(_ value: JSONValue, path: String, failure: @escaping (String) -> Failure) throws(Failure) {
        guard let object = value.object else { throw failure("\(path) is not a JSON object") }
        self.object = object
        self.path = path
        self.failure = failure
    }

    public var keys: Dictionary<String, JSONValue>.Keys { object.keys }

    /// The field's value, nil when absent or null.
    public func value(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    public func has(_ key: String) -> Bool { value(key) != nil }

    public func isObject(_ key: String) -> Bool { value(key)?.object != nil }

    /// The sender's error for a field that is there but not what the model needs.
    public func wrongType(_ key: String, _ expected: String) -> Failure { failure("\(path).\(key) is not \(expected)") }

    public func missing(_ key: String) -> Failure { failure("\(path).\(key) is missing") }

    public func string(_ key: String) throws(Failure) -> String? {
        guard let value = value(key) else { return nil }
        guard let text = value.string else { throw wrongType(key, "a string") }
        return text
    }

    /// A string that must be present and not empty.
    public func requiredString(_ key: String) throws(Failure) -> String {
        guard let text = try string(key), !text.isEmpty else { throw missing(key) }
        return text
    }

    /// An integer written as a JSON number.
    public func int(_ key: String) throws(Failure) -> Int64? {
        guard let value = value(key) else { return nil }
        guard let number = value.int64, case .number = value else { throw wrongType(key, "an integer") }
        return number
    }

    /// An integer written as a JSON number or as a string of digits (Google writes both).
    public func intOrDigits(_ key: String) throws(Failure) -> Int64? {
        guard let value = value(key) else { return nil }
        switch value {
        case .number(let number): if let integer = number.int64 { return integer }
        case .string(let text): if let integer = Int64(text) { return integer }
        default: break
        }
        throw wrongType(key, "an integer")
    }

    public func requiredIntOrDigits(_ key: String) throws(Failure) -> Int64 {
        guard let integer = try intOrDigits(key) else { throw missing(key) }
        return integer
    }

    public func bool(_ key: String) throws(Failure) -> Bool? {
        guard let value = value(key) else { return nil }
        guard let flag = value.bool else { throw wrongType(key, "a boolean") }
        return flag
    }

    /// The nested object, nil when absent.
    public func nested(_ key: String) throws(Failure) -> JSONFields? {
        guard let value = value(key) else { return nil }
        return try JSONFields(value, path: "\(path).\(key)", failure: failure)
    }

    /// The nested object, which must be there.
    public func requiredNested(_ key: String) throws(Failure) -> JSONFields {
        try JSONFields(value(key) ?? .null, path: "\(path).\(key)", failure: failure)
    }
}
