/// Reads one mapping of the configuration. Reading is the schema: every key a section reads is
/// known, `finish()` rejects the rest, and each read first looks for its `TOLLGATE_*` override.
public final class ConfigReader {
    public let path: [String]
    private let values: [String: ConfigValue]
    private let environment: EnvironmentOverrides?
    private var readKeys: Set<String> = []
    /// Set when the read is for `ConfigLoader.schema`: every key read is noted there.
    private let schema: ConfigSchema?
    /// The configuration file's directory, which relative paths written in the file resolve against;
    /// nil: the working directory (no file, or text parsed directly).
    private let baseDirectory: String?
    /// Whether this mapping's values came from an environment variable (a list given whole), whose
    /// relative paths resolve against the working directory.
    private let fromEnvironment: Bool
    /// The keys whose value an environment variable gave.
    private var environmentKeys: Set<String> = []

    /// A reader of an absent section at `path`: every key takes its default, no environment.
    public init(empty path: [String]) {
        self.path = path
        self.environment = nil
        schema = nil
        values = [:]
        baseDirectory = nil
        fromEnvironment = false
    }

    init(path: [String], value: ConfigValue, environment: EnvironmentOverrides?, schema: ConfigSchema? = nil,
         baseDirectory: String? = nil, fromEnvironment: Bool = false) throws(ConfigError) {
        self.path = path
        self.environment = environment
        self.schema = schema
        self.baseDirectory = baseDirectory
        self.fromEnvironment = fromEnvironment
        switch value {
        case .null: values = [:]
        case .map(let map): values = map
        default: throw ConfigError(key: path.isEmpty ? "(top level)" : path.joined(separator: "."),
                                   message: "expected a mapping, got \(value.kindName)")
        }
    }

    public func name(_ key: String) -> String { (path + [key]).joined(separator: ".") }

    private func note(_ key: String, _ value: ConfigSchema.Default?) {
        schema?.note(ConfigSchema.Key(key: name(key), environment: environment.map { _ in EnvironmentOverrides.variableName(for: path + [key]) },
                                      defaultValue: value))
    }

    /// The raw value of `key`: an environment override wins over the file.
    private func raw(_ key: String, asYAML: Bool) throws(ConfigError) -> ConfigValue? {
        readKeys.insert(key)
        if let environment, let override = try environment.take(path: path + [key], asYAML: asYAML) {
            environmentKeys.insert(key)
            return override
        }
        try refuseOtherCasing(of: key)
        guard let value = values[key], value != .null else { return nil }
        return value
    }

    /// A key written in another casing than the one read (`publicBaseUrl` for `publicBaseURL`) is
    /// refused by its name, before a missing required key's own error could hide the typo.
    private func refuseOtherCasing(of key: String) throws(ConfigError) {
        guard values[key] == nil, let other = values.keys.sorted().first(where: { $0 != key && $0.lowercased() == key.lowercased() }) else { return }
        throw ConfigError(key: name(other), message: "unknown key: it is spelled \(key)")
    }

    public func string(_ key: String) throws(ConfigError) -> String? {
        note(key, nil)
        switch try raw(key, asYAML: false) {
        case nil: return nil
        case .scalar(let text)?: return text
        case let other?: throw ConfigError(key: name(key), message: "expected text, got \(other.kindName)")
        }
    }

    public func string(_ key: String, default value: String) throws(ConfigError) -> String {
        defer { note(key, .text(value)) }
        return try string(key) ?? value
    }

    /// An API's URL that credentials are sent to: `https://`, or `http://` to this machine only (a
    /// local proxy, a test server), so a bearer token never crosses a network in clear text.
    public func credentialedURL(_ key: String, default value: String) throws(ConfigError) -> String {
        let url = try string(key, default: value)
        guard url.lowercased().hasPrefix("https://") || Self.isLoopbackHTTP(url) else {
            throw ConfigError(key: name(key), message: "expected an https:// URL (http:// only to 127.0.0.1, localhost or [::1]), got \"\(url)\"")
        }
        return url
    }

    public func int(_ key: String, default value: Int, range: ClosedRange<Int>) throws(ConfigError) -> Int {
        defer { note(key, .int(value)) }
        guard let text = try string(key) else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw ConfigError(key: name(key), message: "expected an integer in \(range.lowerBound)...\(range.upperBound), got \"\(text)\"")
        }
        return number
    }

    public func optionalInt(_ key: String) throws(ConfigError) -> Int? {
        guard let text = try string(key) else { return nil }
        guard let number = Int(text) else {
            throw ConfigError(key: name(key), message: "expected an integer, got \"\(text)\"")
        }
        return number
    }

    public func bool(_ key: String, default value: Bool) throws(ConfigError) -> Bool {
        defer { note(key, .bool(value)) }
        guard let text = try string(key) else { return value }
        switch text.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: throw ConfigError(key: name(key), message: "expected true or false, got \"\(text)\"")
        }
    }

    public func strings(_ key: String) throws(ConfigError) -> [String] {
        note(key, nil)
        switch try raw(key, asYAML: true) {
        case nil: return []
        case .scalar(let text)?: return [text]
        case .list(let items)?:
            var result: [String] = []
            for (index, item) in items.enumerated() {
                guard case .scalar(let text) = item else {
                    throw ConfigError(key: "\(name(key))[\(index)]", message: "expected text, got \(item.kindName)")
                }
                result.append(text)
            }
            return result
        case let other?: throw ConfigError(key: name(key), message: "expected a list, got \(other.kindName)")
        }
    }

    public func stringMap(_ key: String) throws(ConfigError) -> [String: String] {
        note(key, nil)
        switch try raw(key, asYAML: true) {
        case nil: return [:]
        case .map(let map)?:
            var result: [String: String] = [:]
            for (entry, value) in map {
                guard case .scalar(let text) = value else {
                    throw ConfigError(key: "\(name(key)).\(entry)", message: "expected text, got \(value.kindName)")
                }
                result[entry] = text
            }
            return result
        case let other?: throw ConfigError(key: name(key), message: "expected a mapping, got \(other.kindName)")
        }
    }

    /// A nested mapping; environment overrides reach its keys individually.
    public func section<T>(_ key: String, _ read: (ConfigReader) throws(ConfigError) -> T) throws(ConfigError) -> T {
        readKeys.insert(key)
        try refuseOtherCasing(of: key)
        let reader = try ConfigReader(path: path + [key], value: values[key] ?? .null, environment: environment, schema: schema,
                                      baseDirectory: baseDirectory, fromEnvironment: fromEnvironment)
        let result = try read(reader)
        try reader.finish()
        return result
    }

    /// A list of mappings; an environment override replaces the whole list (as YAML).
    public func list<T>(_ key: String, _ read: (ConfigReader) throws(ConfigError) -> T) throws(ConfigError) -> [T] {
        note(key, nil)
        let items: [ConfigValue]
        switch try raw(key, asYAML: true) {
        case nil: items = []
        case .list(let list)?: items = list
        case let other?: throw ConfigError(key: name(key), message: "expected a list, got \(other.kindName)")
        }
        var result: [T] = []
        for (index, item) in items.enumerated() {
            let reader = try ConfigReader(path: path + ["\(key)[\(index)]"], value: item, environment: nil, baseDirectory: baseDirectory,
                                          fromEnvironment: fromEnvironment || environmentKeys.contains(key))
            result.append(try read(reader))
            try reader.finish()
        }
        return result
    }

    /// A list whose items are either plain values or mappings (a short and a long form of one thing).
    public func list<T>(_ key: String, scalar: (String, _ itemName: String) throws(ConfigError) -> T,
                 mapping: (ConfigReader) throws(ConfigError) -> T) throws(ConfigError) -> [T] {
        note(key, nil)
        let items: [ConfigValue]
        switch try raw(key, asYAML: true) {
        case nil: items = []
        case .scalar(let text)?: items = [.scalar(text)]
        case .list(let list)?: items = list
        case let other?: throw ConfigError(key: name(key), message: "expected a list, got \(other.kindName)")
        }
        var result: [T] = []
        for (index, item) in items.enumerated() {
            let itemName = "\(key)[\(index)]"
            if case .scalar(let text) = item {
                result.append(try scalar(text, name(itemName)))
                continue
            }
            let reader = try ConfigReader(path: path + [itemName], value: item, environment: nil, baseDirectory: baseDirectory,
                                          fromEnvironment: fromEnvironment || environmentKeys.contains(key))
            result.append(try mapping(reader))
            try reader.finish()
        }
        return result
    }

    func finish() throws(ConfigError) {
        let unknown = Set(values.keys).subtracting(readKeys).sorted()
        if let first = unknown.first {
            throw ConfigError(key: name(first), message: "unknown key (known here: \(readKeys.sorted().joined(separator: ", ")))")
        }
    }
}

extension ConfigReader {
    /// `text`, a file or directory path `key` gave: a relative one written in the configuration file
    /// resolves against the file's directory (as Prometheus and nginx resolve theirs), so the file works
    /// from any working directory; one from an environment variable, or a default, against the working
    /// directory.
    public func resolvePath(_ text: String, key: String) -> String {
        guard let baseDirectory, !text.isEmpty, !text.hasPrefix("/"), !fromEnvironment, !environmentKeys.contains(key) else { return text }
        var relative = Substring(text)
        while relative.hasPrefix("./") { relative = relative.dropFirst(2) }
        return baseDirectory.hasSuffix("/") ? baseDirectory + relative : baseDirectory + "/" + relative
    }

    /// Whether `key` has a value written in the file (not a default, not an environment variable's).
    public func isWrittenInFile(_ key: String) -> Bool {
        guard let value = values[key], value != .null else { return false }
        return !fromEnvironment && !environmentKeys.contains(key)
    }

    /// A file or directory path (`resolvePath`); empty is none.
    public func path(_ key: String) throws(ConfigError) -> String? {
        guard let text = try string(key), !text.isEmpty else { return nil }
        return resolvePath(text, key: key)
    }

    /// A path (`resolvePath`), or `value` as it is (a default is the working directory's) when absent.
    public func path(_ key: String, default value: String) throws(ConfigError) -> String {
        defer { note(key, .text(value)) }
        guard let text = try string(key) else { return value }
        return text.isEmpty ? text : resolvePath(text, key: key)
    }

    public func requiredPath(_ key: String) throws(ConfigError) -> String {
        resolvePath(try requiredString(key), key: key)
    }

    /// A list of paths (`resolvePath`), each as written when empty (for the caller's own error).
    public func paths(_ key: String) throws(ConfigError) -> [String] {
        try strings(key).map { resolvePath($0, key: key) }
    }

    /// A mapping of names to paths (`resolvePath`).
    public func pathMap(_ key: String) throws(ConfigError) -> [String: String] {
        try stringMap(key).mapValues { resolvePath($0, key: key) }
    }

    /// The text of `key`, which must be present and not empty.
    public func requiredString(_ key: String) throws(ConfigError) -> String {
        guard let value = try string(key), !value.isEmpty else { throw ConfigError(key: name(key), message: "is required") }
        return value
    }

    /// Names must be unique, and so must secrets: where a secret names its owner (Iaptic apps, Citcon
    /// accounts on the shared route), one shared by two would attribute deliveries to the first.
    public func requireDistinct(_ owners: [(name: String, secrets: [String])], key: String, what: String) throws(ConfigError) {
        var names = Set<String>()
        var ownerOfSecret: [String: String] = [:]
        for (owner, secrets) in owners {
            guard names.insert(owner).inserted else { throw ConfigError(key: name(key), message: "\(what) \(owner) is configured twice") }
            for secret in secrets {
                if let other = ownerOfSecret.updateValue(owner, forKey: secret), other != owner {
                    throw ConfigError(key: name(key), message: "\(what)s \(other) and \(owner) share a secret")
                }
            }
        }
    }
}

extension ConfigReader {
    /// Whether `url` is `http://` to this machine: its host (read after any `user@`, which would
    /// otherwise hide the real one) is in 127.0.0.0/8, `[::1]` or `localhost`, with at most a port.
    public static func isLoopbackHTTP(_ url: String) -> Bool {
        let lowered = url.lowercased()
        guard lowered.hasPrefix("http://") else { return false }
        let authority = lowered.dropFirst("http://".count).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.contains("@") else { return false }
        func isPort(_ text: Substring) -> Bool {
            text.first == ":" && (2...6).contains(text.count) && text.dropFirst().allSatisfy { $0.isASCII && $0.isNumber }
        }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return false }
            let rest = authority[authority.index(after: close)...]
            return authority[authority.index(after: authority.startIndex)..<close] == "::1" && (rest.isEmpty || isPort(rest))
        }
        var host = authority
        if let colon = authority.firstIndex(of: ":") {
            guard isPort(authority[colon...]) else { return false }
            host = authority[..<colon]
        }
        if host == "localhost" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets.allSatisfy({ octet in
            (1...3).contains(octet.count) && octet.allSatisfy { $0.isASCII && $0.isNumber } && (Int(octet).map { $0 <= 255 } ?? false)
        }) else { return false }
        return octets.first == "127"
    }
}
