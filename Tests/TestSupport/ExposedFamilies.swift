import Toolkit

/// The `# TYPE name kind` and `# HELP name text` lines of a Prometheus exposition, by family name.
public struct ExposedFamilies: Sendable {
    public let all: [String: MetricFamily.Kind]
    public let help: [String: String]

    public init(_ text: String) {
        var all: [String: MetricFamily.Kind] = [:]
        var help: [String: String] = [:]
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                if parts.count == 4 { all[String(parts[2])] = MetricFamily.Kind(rawValue: String(parts[3])) }
            } else if line.hasPrefix("# HELP ") {
                let parts = line.split(separator: " ", maxSplits: 3)
                if parts.count == 4 { help[String(parts[2])] = String(parts[3]) }
            }
        }
        self.all = all
        self.help = help
    }
}
