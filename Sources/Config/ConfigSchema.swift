/// Every configuration key with its environment variable and default, as the loader reads them
/// (`ConfigLoader.schema`): reading is the schema, so this list cannot drift from the code. For
/// `tollgate describe`, which docs/configuration.md and the deploy files are checked against.
public final class ConfigSchema {
    public enum Default: Sendable, Equatable {
        case text(String)
        case int(Int)
        case bool(Bool)
    }

    public struct Key: Sendable, Equatable {
        /// The dotted path, e.g. `kafka.ackTimeoutMs` (`[n]` inside lists).
        public let key: String
        /// `TOLLGATE_...`; nil inside lists, which an override replaces whole.
        public let environment: String?
        /// Nil when the key has none (unset means absent, or an empty list).
        public let defaultValue: Default?
    }

    private var keys: [Key] = []
    private var positions: [String: Int] = [:]

    init() {}

    /// A key read again keeps its first place; a default, once known, stays.
    func note(_ key: Key) {
        if let index = positions[key.key] {
            if keys[index].defaultValue == nil, key.defaultValue != nil { keys[index] = key }
            return
        }
        positions[key.key] = keys.count
        keys.append(key)
    }

    var all: [Key] { keys }
}

extension ConfigLoader {
    /// Every key a configuration is read with, in reading order, with its defaults.
    public static func schema(senders: [SenderConfigSection]) throws(ConfigError) -> [ConfigSchema.Key] {
        let schema = ConfigSchema()
        let reader = try ConfigReader(path: [], value: .null, environment: EnvironmentOverrides([:]), schema: schema)
        _ = try read(reader, senders: senders)
        return schema.all
    }
}
