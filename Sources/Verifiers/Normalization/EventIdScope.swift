/// The part of an event id that names who authenticated the delivery: the Citcon account whose
/// secret verified it, the Alipay+ client, the Iaptic app, the Google Pub/Sub subscription. It comes
/// right after the sender's prefix (`<sender>:<scope>:...`), so one account's deliveries can never
/// carry, and so deduplicate, another's ids (the gateway's window and the workers' `processed_events`
/// are keyed by the id alone). Docs: docs/topics.md.
enum EventIdScope {
    /// `scope` with `%` and `:` percent-encoded: the scope ends at the first `:` after the prefix
    /// whatever the configured name, so no two scopes and remainders join into the same id.
    static func component(_ scope: String) -> String {
        guard scope.contains(where: { $0 == ":" || $0 == "%" }) else { return scope }
        var escaped = ""
        for character in scope {
            switch character {
            case "%": escaped += "%25"
            case ":": escaped += "%3A"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
