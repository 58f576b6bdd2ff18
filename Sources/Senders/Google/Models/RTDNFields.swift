import Toolkit
/// Typed reads of one RTDN object; a wrong type or missing required field makes the data "not an RTDN".
struct RTDNFields {
    private let object: [String: JSONValue]
    private let path: String

    init(_ value: JSONValue, path: String) throws(DeveloperNotification.Invalid) {
        guard let object = value.object else { throw Self.invalid("\(path) is not a JSON object") }
        self.object = object
        self.path = path
    }

    var keys: Dictionary<String, JSONValue>.Keys { object.keys }

    func has(_ key: String) -> Bool { present(key) != nil }

    func isObject(_ key: String) -> Bool { present(key)?.object != nil }

    func string(_ key: String) throws(DeveloperNotification.Invalid) -> String? {
        guard let value = present(key) else { return nil }
        guard let text = value.string else { throw Self.invalid("\(path).\(key) is not a string") }
        return text
    }

    func requiredString(_ key: String) throws(DeveloperNotification.Invalid) -> String {
        guard let text = try string(key), !text.isEmpty else { throw Self.invalid("\(path).\(key) is missing") }
        return text
    }

    /// An integer written as a JSON number or as a string of digits.
    func int(_ key: String) throws(DeveloperNotification.Invalid) -> Int64? {
        guard let value = present(key) else { return nil }
        switch value {
        case .number(let number): if let integer = number.int64 { return integer }
        case .string(let text): if let integer = Int64(text) { return integer }
        default: break
        }
        throw Self.invalid("\(path).\(key) is not an integer")
    }

    func requiredInt(_ key: String) throws(DeveloperNotification.Invalid) -> Int64 {
        guard let integer = try int(key) else { throw Self.invalid("\(path).\(key) is missing") }
        return integer
    }

    func nested(_ key: String) throws(DeveloperNotification.Invalid) -> RTDNFields {
        try RTDNFields(present(key) ?? .null, path: "\(path).\(key)")
    }

    private func present(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    private static func invalid(_ message: String) -> DeveloperNotification.Invalid {
        DeveloperNotification.Invalid(reason: "not_an_rtdn", message: message)
    }
}
