/// The headers of a raw record (`raw.<sender>`) besides its CloudEvents ones: the kept request headers
/// (`http_<name>`), when and where the delivery arrived, and whose it is. The gateway writes them;
/// `tollgate replay` and the forwarding of webhooks read them back, so the names live in one place.
public enum RawRecordHeaders {
    public static let requestHeaderPrefix = "http_"
    public static let receivedAt = "tollgate_received_at"
    public static let path = "tollgate_path"
    /// The sender's `authenticatedScope`, written by the gateway (never copied from the request).
    public static let authenticatedScope = "tollgate_authenticated_scope"
    /// The app and environment of the delivery's first event (none when it carried no event).
    public static let app = "tollgate_app"
    public static let environment = "tollgate_environment"
    /// Every event's `ce_id` as a JSON array, written only when the delivery carried more than one (the
    /// CloudEvents headers name the first): what the console's index of raw deliveries reads.
    public static let eventIds = "tollgate_event_ids"
}
