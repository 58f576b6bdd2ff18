import Yams

/// A parsed YAML value, reduced to what configuration needs.
enum ConfigValue: Equatable {
    case null
    case scalar(String)
    case list([ConfigValue])
    case map([String: ConfigValue])

    static func parse(yaml: String, origin: String) throws(ConfigError) -> ConfigValue {
        do {
            guard let node = try Yams.compose(yaml: yaml) else { return .null }
            return try ConfigValue(node, origin: origin)
        } catch let error as ConfigError {
            throw error
        } catch {
            // Only the first line (position and problem): the rest quotes the source, which may hold secrets.
            let summary = "\(error)".split(separator: "\n").first.map(String.init) ?? "parse error"
            throw ConfigError(key: origin, message: "not valid YAML: \(summary)")
        }
    }

    private init(_ node: Node, origin: String) throws(ConfigError) {
        switch node {
        case .scalar(let scalar):
            let isNull = scalar.style == .plain && ["", "~", "null", "Null", "NULL"].contains(scalar.string)
            self = isNull ? .null : .scalar(scalar.string)
        case .sequence(let sequence):
            var items: [ConfigValue] = []
            for item in sequence { items.append(try ConfigValue(item, origin: origin)) }
            self = .list(items)
        case .mapping(let mapping):
            var entries: [String: ConfigValue] = [:]
            for (key, value) in mapping {
                guard let name = key.string else { throw ConfigError(key: origin, message: "mapping keys must be text") }
                if entries[name] != nil { throw ConfigError(key: origin, message: "key \(name) appears twice") }
                entries[name] = try ConfigValue(value, origin: origin)
            }
            self = .map(entries)
        case .alias:
            throw ConfigError(key: origin, message: "YAML aliases are not supported")
        }
    }

    var kindName: String {
        switch self {
        case .null: "nothing"
        case .scalar(let text): "\"\(text)\""
        case .list: "a list"
        case .map: "a mapping"
        }
    }
}
