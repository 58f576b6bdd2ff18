import Events
import Foundation

/// One sender's deliveries for `tollgate-load` (`make bench`), as the gateway receives them: each
/// index gives a different delivery (its own event id), so the gateway's deduplication never answers
/// from memory. A sender's folder defines its own (`SenderDefinition.loadTraffic`).
public protocol LoadTraffic: Sendable {
    /// Signature checks the gateway makes per delivery, for the ratio to the raw verify rate.
    var checksPerRequest: Int { get }
    /// The algorithm of those checks (`ES256`, `RS256`), nil for shared-secret senders.
    var algorithm: String? { get }
    /// Delivery `index` of the run `run` (a short random tag, so two runs never share ids).
    func request(_ index: Int, run: String) -> LoadRequest
}

/// What a sender posts: the path, its own headers and the body, exactly as signed.
public struct LoadRequest: Sendable {
    public var path: String
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(path: String, headers: [(String, String)], body: [UInt8]) {
        self.path = path
        self.headers = headers
        self.body = body
    }
}

/// Where `tollgate-load prepare` keeps one sender's generated keys and identities (files named
/// `<sender>-<name>`), for `tollgate-load run` to read back. Nothing in it is a real secret.
public struct LoadDirectory: Sendable {
    public let path: String
    let sender: SourceName

    public init(path: String, sender: SourceName) {
        self.path = path
        self.sender = sender
    }

    /// The full path of one of the sender's files, e.g. for a key the gateway's configuration names.
    public func file(_ name: String) -> String { path + "/" + sender.rawValue + "-" + name }

    public func write(_ text: String, _ name: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: file(name)))
    }

    public func read(_ name: String) throws -> String {
        try String(contentsOfFile: file(name), encoding: .utf8)
    }

    /// A Codable identity written as JSON and read back.
    public func write<T: Encodable>(json value: T, _ name: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(value).write(to: URL(fileURLWithPath: file(name)))
    }

    public func read<T: Decodable>(json type: T.Type, _ name: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(contentsOf: URL(fileURLWithPath: file(name))))
    }
}

/// A load setup step that could not be done (a key that did not generate, a file that is missing).
public struct LoadSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension Optional {
    /// The value, or a `LoadSetupError` naming what failed.
    func orLoadError(_ what: String) throws -> Wrapped {
        guard let self else { throw LoadSetupError("\(what) failed") }
        return self
    }
}

/// Random hex for generated secrets and run tags.
public func randomHex(_ bytes: Int) -> String {
    var generator = SystemRandomNumberGenerator()
    return (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
}
