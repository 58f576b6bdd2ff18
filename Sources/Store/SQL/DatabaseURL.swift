/// Where `SQLDatabase.open` connects: "sqlite:<path>[?busy_timeout_ms=N]" or a libpq-style
/// "postgres://" / "postgresql://" URL (`PostgresURL`).
enum DatabaseURL: Sendable, Equatable {
    case sqlite(path: String, busyTimeoutMs: Int32)
    case postgres(PostgresURL)

    /// How long an SQLite connection waits for another one's lock before failing as busy (transient).
    static let defaultBusyTimeoutMs: Int32 = 5_000

    static func parse(_ url: String) throws(StoreError) -> DatabaseURL {
        if url.hasPrefix("sqlite:") {
            var path = String(url.dropFirst("sqlite:".count))
            var busyTimeoutMs = defaultBusyTimeoutMs
            // The one option: tests shorten the wait so a held lock fails fast; a path may not contain "?".
            if let question = path.firstIndex(of: "?") {
                let option = path[path.index(after: question)...]
                let prefix = "busy_timeout_ms="
                guard option.hasPrefix(prefix), let value = Int32(option.dropFirst(prefix.count)), value >= 0 else {
                    throw StoreError(.invalid, "database URL \(url) has an unknown option: expected sqlite:<path>[?busy_timeout_ms=<ms>]")
                }
                busyTimeoutMs = value
                path = String(path[..<question])
            }
            guard !path.isEmpty else {
                throw StoreError(.invalid, "database URL \"sqlite:\" has no path: expected sqlite:<path>")
            }
            guard !path.hasPrefix(":memory:"), !path.hasPrefix("file:") else {
                throw StoreError(.invalid, "database URL \(url) is not a file path: expected sqlite:<path>")
            }
            return .sqlite(path: path, busyTimeoutMs: busyTimeoutMs)
        }
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            return .postgres(try PostgresURL.parse(url))
        }
        throw StoreError(.invalid, "database URL \(redactingPassword(url)) is neither sqlite:<path> nor postgres://...")
    }
}

/// The URL with the password in its user info and any `password=` query parameter replaced by "***".
func redactingPassword(_ url: String) -> String {
    guard let schemeEnd = url.range(of: "://") else { return url }
    var result = String(url[..<schemeEnd.upperBound])
    let rest = url[schemeEnd.upperBound...]
    let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
    let authority = rest[..<authorityEnd]
    if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
        result += authority[...colon] + "***" + authority[at...]
    } else {
        result += authority
    }
    let tail = rest[authorityEnd...]
    guard let question = tail.firstIndex(of: "?") else { return result + tail }
    result += tail[...question]
    let query = tail[tail.index(after: question)...]
    let redacted = query.split(separator: "&", omittingEmptySubsequences: false).map { pair in
        pair.lowercased().hasPrefix("password=") ? "password=***" : String(pair)
    }
    return result + redacted.joined(separator: "&")
}
