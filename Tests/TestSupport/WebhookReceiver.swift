import Foundation
import Synchronization

/// A TLS chain made for one test: a CA of its own and a server certificate it signs, for names and
/// addresses the test chooses (openssl's command line).
public struct TestTLSChain: Sendable {
    public let caFile: String
    public let certFile: String
    public let keyFile: String

    /// `names`: the server certificate's DNS names; `addresses`: its IP addresses.
    public static func make(in directory: URL, names: [String], addresses: [String] = [], label: String = "server") async throws -> TestTLSChain {
        let path = { (name: String) in directory.appendingPathComponent("\(label)-\(name)").path }
        let openssl = "/usr/bin/openssl"
        func run(_ arguments: [String]) async throws {
            let result = try await Subprocess.run(openssl, arguments)
            guard result.status == 0 else { throw ReceiverError("openssl \(arguments.first ?? ""): \(result.stderr)") }
        }
        try await run(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("ca.key"),
                       "-out", path("ca.pem"), "-days", "2", "-subj", "/CN=Tollgate test CA \(label)",
                       "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"])
        try await run(["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("key.pem"),
                       "-out", path("csr.pem"), "-subj", "/CN=\(names.first ?? "server")"])
        let alt = (names.map { "DNS:\($0)" } + addresses.map { "IP:\($0)" }).joined(separator: ",")
        try Data("subjectAltName=\(alt)\nextendedKeyUsage=serverAuth\n".utf8).write(to: URL(fileURLWithPath: path("ext.cnf")))
        try await run(["x509", "-req", "-in", path("csr.pem"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"), "-CAcreateserial",
                       "-out", path("cert.pem"), "-days", "2", "-extfile", path("ext.cnf")])
        return TestTLSChain(caFile: path("ca.pem"), certFile: path("cert.pem"), keyFile: path("key.pem"))
    }
}

/// `scripts/webhook-receiver.py` running: an HTTPS endpoint that verifies every delivery with the
/// `standardwebhooks` package from PyPI and logs each as a JSON line.
public final class WebhookReceiver: Sendable {
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// One delivery as the receiver saw it.
    public struct Delivery: Sendable, Decodable {
        public var id: String?
        public var verified: Bool
        public var answer: Int
        public var contentType: String?
        public var ceId: String?
        public var ceType: String?
        public var ceSubject: String?
        public var specversion: String?
        public var user: String?
        public var product: String?
        public var active: Bool?
        public var state: String?
        public var purchaseId: String?
        public var sequence: Int64?
        public var eventId: String?
        public var eventType: String?
        public var eventSubject: String?
        public var entitlementEventId: String?
        public var expiresAt: String?
        public var signatures: [String]?
        /// What `docs/schemas` says is wrong with the event and the entitlement (none expected).
        public var schemaErrors: [String]?
        /// The request as it came: its target, body (UTF-8) and headers (names in lower case).
        public var path: String?
        public var body: String?
        public var headers: [String: String]?
    }

    public let port: Int
    public let logFile: String
    private let process: Mutex<Process?>

    /// `failUsers`' deliveries are answered 503 until `releaseFile` exists; while `holdFile` exists, a
    /// delivery is logged (`answer` 0) and never answered.
    public init(chain: TestTLSChain, secret: String, directory: URL, name: String = "receiver", failUsers: [String] = [],
                releaseFile: String? = nil, retryAfter: Int? = nil, status: Int? = nil, answerBytes: Int? = nil, stallBody: Bool = false,
                holdFile: String? = nil) async throws {
        logFile = directory.appendingPathComponent("\(name).jsonl").path
        _ = FileManager.default.createFile(atPath: logFile, contents: nil)
        let process = Process()
        process.executableURL = Self.root.appendingPathComponent(".build/deploy-venv/bin/python")
        var arguments = [Self.root.appendingPathComponent("scripts/webhook-receiver.py").path, "--cert", chain.certFile, "--key", chain.keyFile,
                         "--secret", secret, "--log", logFile, "--schemas", Self.root.appendingPathComponent("docs/schemas").path]
        if !failUsers.isEmpty { arguments += ["--fail-users", failUsers.joined(separator: ",")] }
        if let releaseFile { arguments += ["--release-file", releaseFile] }
        if let retryAfter { arguments += ["--retry-after", String(retryAfter)] }
        if let status { arguments += ["--status", String(status)] }
        if let answerBytes { arguments += ["--answer-bytes", String(answerBytes)] }
        if stallBody { arguments.append("--stall-body") }
        if let holdFile { arguments += ["--hold-file", holdFile] }
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try Subprocess.start(process)
        let handle = out.fileHandleForReading
        let line = try await offPool { () throws -> String in
            var bytes: [UInt8] = []
            while true {
                let chunk = handle.readData(ofLength: 1)
                guard let byte = chunk.first else { throw ReceiverError("the receiver exited before it listened") }
                if byte == 0x0A { return String(decoding: bytes, as: UTF8.self) }
                bytes.append(byte)
            }
        }
        guard let port = Int(line) else {
            process.terminate()
            throw ReceiverError("the receiver printed \(line), not its port")
        }
        self.port = port
        self.process = Mutex(process)
    }

    public var deliveries: [Delivery] {
        get throws {
            let text = try String(contentsOfFile: logFile, encoding: .utf8)
            return try text.split(separator: "\n").map { try JSONDecoder().decode(Delivery.self, from: Data($0.utf8)) }
        }
    }

    /// SIGKILL: the test runner's blocked signals are inherited, so SIGTERM may never arrive.
    public func stop() {
        process.withLock { process in
            if let running = process, running.isRunning { kill(running.processIdentifier, SIGKILL) }
            process = nil
        }
    }

    deinit { stop() }
}

public struct ReceiverError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
