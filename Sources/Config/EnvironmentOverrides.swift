/// `TOLLGATE_*` variables: `TOLLGATE_` + the key path in upper snake case
/// (`kafka.ackTimeoutMs` -> `TOLLGATE_KAFKA_ACK_TIMEOUT_MS`). A variable no key claims is an error,
/// so a typo cannot silently leave a default in place.
final class EnvironmentOverrides {
    static let prefix = "TOLLGATE_"
    private var unclaimed: [String: String]

    init(_ environment: [String: String]) {
        unclaimed = environment.filter { $0.key.hasPrefix(Self.prefix) }
    }

    static func variableName(for path: [String]) -> String {
        prefix + path.map(upperSnake).joined(separator: "_")
    }

    /// The override for `path`, parsed as YAML for lists and mappings (`[a, b]`, `{k: v}`);
    /// a list may also be written comma-separated (`a,b`).
    func take(path: [String], asYAML: Bool) throws(ConfigError) -> ConfigValue? {
        let name = Self.variableName(for: path)
        guard let text = unclaimed.removeValue(forKey: name) else { return nil }
        guard asYAML else { return .scalar(text) }
        let trimmed = text.drop(while: { $0 == " " })
        if trimmed.first == "[" || trimmed.first == "{" || trimmed.hasPrefix("- ") {
            return try ConfigValue.parse(yaml: text, origin: name)
        }
        return .list(text.split(separator: ",").map { .scalar($0.trimmingCharacters(in: " ")) })
    }

    func finish() throws(ConfigError) {
        if let name = unclaimed.keys.sorted().first {
            throw ConfigError(key: name, message: "unknown environment variable: no configuration key is named so")
        }
    }

    /// `maxBodyBytes` -> `MAX_BODY_BYTES`, `baseURL` -> `BASE_URL`.
    static func upperSnake(_ name: String) -> String {
        let chars = Array(name)
        var out = ""
        for (i, c) in chars.enumerated() {
            if c.isUppercase, i > 0 {
                let previous = chars[i - 1]
                let nextIsLower = i + 1 < chars.count && chars[i + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) { out.append("_") }
            }
            out.append(c.uppercased())
        }
        return out
    }
}

private extension Substring {
    func trimmingCharacters(in set: Character) -> String {
        String(drop(while: { $0 == set }).reversed().drop(while: { $0 == set }).reversed())
    }
}
