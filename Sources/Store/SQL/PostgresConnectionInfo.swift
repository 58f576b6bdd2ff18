import CPostgres

/// What libpq connects with: the caller's URL, behind defaults it may override.
enum PostgresConnectionInfo {
    /// Placed before the URL in PQconnectdbParams, so a value the URL sets wins.
    static let defaults: [(String, String)] = [
        ("connect_timeout", "5"),
        ("application_name", "tollgate"),
        // A statement stuck behind a lock fails (and is retried later) instead of holding a lane forever.
        ("options", "-c statement_timeout=30000"),
    ]

    /// Refuses a URL libpq cannot parse or whose port is not a number, which libpq would only
    /// report when connecting (and which is no reason to retry).
    static func validate(_ url: String) throws(StoreError) {
        let options: [String: String]
        switch parse(url) {
        case .success(let parsed): options = parsed
        case .failure(let reason):
            throw StoreError(.invalid, "database URL \(redactingPassword(url)) is not a valid PostgreSQL URL: \(scrub(reason, url))")
        }
        for port in (options["port"] ?? "").split(separator: ",", omittingEmptySubsequences: false) where !port.isEmpty {
            guard let number = Int(port), (1...65535).contains(number) else {
                throw StoreError(.invalid, "database URL \(redactingPassword(url)) has an invalid port \"\(port)\"")
            }
        }
    }

    /// `message` without the URL or its password (libpq may quote the part of a URL it could not parse).
    static func scrub(_ message: String, _ url: String) -> String {
        var message = message.replacing(url, with: redactingPassword(url))
        var secrets = [userInfoPassword(url)]
        if case .success(let options) = parse(url) { secrets.append(options["password"]) }
        for case let secret? in secrets where !secret.isEmpty {
            message = message.replacing(secret, with: "***")
        }
        return message
    }

    /// libpq's reading of the URL: keyword to value, or why it cannot read it.
    private static func parse(_ url: String) -> Result<[String: String], ParseFailure> {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &errorMessage) else {
            defer { PQfreemem(errorMessage) }
            return .failure(ParseFailure(reason: errorMessage.map { trimmed($0) } ?? "out of memory"))
        }
        defer { PQconninfoFree(options) }
        var values: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { values[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        return .success(values)
    }

    private struct ParseFailure: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    private static func scrub(_ failure: ParseFailure, _ url: String) -> String {
        var message = failure.reason
        if let secret = userInfoPassword(url), !secret.isEmpty { message = message.replacing(secret, with: "***") }
        return message
    }

    /// The password in a URL's user info, found by hand so it works when libpq cannot parse the URL.
    private static func userInfoPassword(_ url: String) -> String? {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        let rest = url[schemeEnd.upperBound...]
        let authority = rest[..<(rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex)]
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { return nil }
        return String(authority[authority.index(after: colon)..<at])
    }
}
