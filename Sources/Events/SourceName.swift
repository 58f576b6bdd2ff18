/// The senders Tollgate accepts; the raw value names the route, the raw topic and `ce_source`.
public enum SourceName: String, CaseIterable, Sendable, Codable {
    case apple
    case google
    case citcon
    case iaptic
    case alipayplus
}
