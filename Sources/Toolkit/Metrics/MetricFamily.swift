/// One Prometheus metric family a module emits: its name, type and what it counts. Each metrics type
/// lists its families (`tollgate describe` prints them, tests hold the lists to what is emitted).
public struct MetricFamily: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    public let name: String
    public let kind: Kind
    /// The labels, in the order they are written.
    public let labels: [String]
    public let help: String

    public init(_ name: String, _ kind: Kind, labels: [String] = [], help: String) {
        self.name = name
        self.kind = kind
        self.labels = labels
        self.help = help
    }
}
