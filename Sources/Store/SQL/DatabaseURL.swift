/// Where `SQLDatabase.open` connects: "sqlite:<path>" or a libpq "postgres://" / "postgresql://" URL.
enum DatabaseURL: Sendable, Equatable {
    case sqlite(path: String)
    case postgres(url: String)

    static func parse(_ url: String) throws(StoreError) -> DatabaseURL {
        if url.hasPrefix("sqlite:") {
            let path = String(url.dropFirst("sqlite:".count))
            guard !path.isEmpty else {
                throw StoreError(.invalid, "database URL \"sqlite:\" has no path: expected sqlite:<path>")
            }
            guard !path.hasPrefix(":memory:"), !path.hasPrefix("file:") else {
                throw StoreError(.invalid, "database URL \(url) is not a file path: expected sqlite:<path>")
            }
            return .sqlite(path: path)
        }
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            try PostgresConnectionInfo.validate(url)
            return .postgres(url: url)
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
