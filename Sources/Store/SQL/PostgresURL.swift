#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A "postgres://" or "postgresql://" URL in libpq's form,
/// `postgres[ql]://[user[:password]@][host][:port][/dbname][?option=value&...]`, read into what
/// postgres-nio connects with. postgres-nio takes no URL, so this is the one place that reads one; it
/// knows the options in `Option` (docs/configuration.md lists them) and refuses any other, where libpq
/// would have taken its whole keyword list.
struct PostgresURL: Sendable, Equatable {
    enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// The socket file: `<host dir>/.s.PGSQL.<port>`, as libpq names it.
        case unixSocket(path: String)
    }

    /// libpq's sslmode values. postgres-nio has no "try plain first" mode: `allow` connects as `prefer`.
    enum SSLMode: String, Sendable, CaseIterable {
        case disable, allow, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    /// The query options read; any other is refused.
    enum Option: String, CaseIterable {
        case host, port, user, password, dbname
        case sslmode, sslrootcert
        case connectTimeout = "connect_timeout"
        case applicationName = "application_name"
        case options
    }

    var endpoint: Endpoint
    var user: String
    var password: String?
    var database: String?
    var sslMode: SSLMode
    var sslRootCert: String?
    /// Seconds for the whole connection set-up (TCP, TLS, authentication); nil waits as long as it takes.
    var connectTimeoutSeconds: Int?
    var applicationName: String
    /// The startup packet's `options` (command-line switches for the server session). The default sets
    /// the statement timeout, so a statement stuck behind a lock fails (and is retried later) instead of
    /// holding a lane forever; a URL's `options` replaces it whole, as it did with libpq.
    var options: String

    static let defaultConnectTimeoutSeconds = 5
    static let defaultOptions = "-c statement_timeout=30000"
    static let defaultPort = 5432

    static func parse(_ url: String) throws(StoreError) -> PostgresURL {
        func invalid(_ reason: String) -> StoreError {
            StoreError(.invalid, "database URL \(redactingPassword(url)) is not a valid PostgreSQL URL: \(reason)")
        }
        guard let schemeEnd = url.range(of: "://"),
              ["postgres", "postgresql"].contains(url[..<schemeEnd.lowerBound]) else {
            throw invalid("expected postgres:// or postgresql://")
        }
        var rest = Substring(url[schemeEnd.upperBound...])
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var query: Substring = ""
        if let question = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        let authority = rest[..<(rest.firstIndex(of: "/") ?? rest.endIndex)]
        let path = rest[authority.endIndex...].dropFirst()

        var values: [Option: String] = [:]
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            if let colon = userInfo.firstIndex(of: ":") {
                values[.user] = try decoded(userInfo[..<colon], invalid)
                values[.password] = try decoded(userInfo[userInfo.index(after: colon)...], invalid)
            } else {
                values[.user] = try decoded(userInfo, invalid)
            }
        }
        let hostPort = authority[(authority.lastIndex(of: "@").map { authority.index(after: $0) } ?? authority.startIndex)...]
        var host: Substring = hostPort, port: Substring?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw invalid("unterminated [ in the host") }
            host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            let after = hostPort[hostPort.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("unexpected text after the IPv6 host") }
                port = after.dropFirst()
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = hostPort[..<colon]
            port = hostPort[hostPort.index(after: colon)...]
        }
        if !host.isEmpty { values[.host] = try decoded(host, invalid) }
        if let port, !port.isEmpty { values[.port] = String(port) }
        if !path.isEmpty { values[.dbname] = try decoded(path, invalid) }

        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = try decoded(parts[0], invalid)
            guard let option = Option(rawValue: key) else {
                throw invalid("unknown option \"\(key)\" (known: \(Option.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            values[option] = parts.count > 1 ? try decoded(parts[1], invalid) : ""
        }

        let portNumber: Int
        if let text = values[.port] {
            guard let number = Int(text), (1...65535).contains(number) else { throw invalid("invalid port \"\(text)\"") }
            portNumber = number
        } else {
            portNumber = defaultPort
        }
        var sslMode = SSLMode.prefer
        if let text = values[.sslmode] {
            guard let mode = SSLMode(rawValue: text) else {
                throw invalid("sslmode \"\(text)\" is not one of \(SSLMode.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            sslMode = mode
        }
        var connectTimeout: Int? = defaultConnectTimeoutSeconds
        if let text = values[.connectTimeout] {
            guard let seconds = Int(text) else { throw invalid("connect_timeout \"\(text)\" is not a number of seconds") }
            // libpq's reading: zero or negative waits forever, and the least is 2 s.
            connectTimeout = seconds <= 0 ? nil : max(seconds, 2)
        }
        let hostName = values[.host] ?? "localhost"
        let endpoint: Endpoint = hostName.hasPrefix("/")
            ? .unixSocket(path: hostName + "/.s.PGSQL.\(portNumber)")
            : .tcp(host: hostName, port: portNumber)
        return PostgresURL(
            endpoint: endpoint, user: values[.user] ?? currentUserName(), password: values[.password],
            database: values[.dbname], sslMode: sslMode, sslRootCert: values[.sslrootcert],
            connectTimeoutSeconds: connectTimeout, applicationName: values[.applicationName] ?? "tollgate",
            options: values[.options] ?? defaultOptions)
    }

    /// `text` with its %XX escapes decoded.
    private static func decoded(_ text: Substring, _ invalid: (String) -> StoreError) throws(StoreError) -> String {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let high = utf8.index(after: index)
                guard high < utf8.endIndex, utf8.index(after: high) < utf8.endIndex,
                      let value = UInt8(String(decoding: [utf8[high], utf8[utf8.index(after: high)]], as: UTF8.self), radix: 16) else {
                    throw invalid("a % escape is not two hex digits")
                }
                bytes.append(value)
                index = utf8.index(high, offsetBy: 2)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// libpq's default user: the operating system's name for this process's user.
    private static func currentUserName() -> String {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return "postgres" }
        return String(cString: name)
    }
}
