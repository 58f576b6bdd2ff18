import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import Verifiers
import TestSupport
import Testing
@testable import Toolkit

/// A real OCSP responder: `openssl ocsp` serving an index of certificates on a local port,
/// signing with the issuer's key (or a delegate's). Stopped when the test ends.
final class OCSPResponder: @unchecked Sendable {
    struct Entry {
        var certificate: Certificate
        var subject: String
        var serial: Int
        var revoked = false
    }

    let port: Int
    private let process = Process()
    private let directory: URL

    var url: String { "http://127.0.0.1:\(port)" }

    /// Starts `openssl ocsp` on `port` answering for certificates issued by `issuer`.
    init(port: Int, issuer: Certificate, signer: Certificate, signerKey: PrivateKey, entries: [Entry]) throws {
        self.port = port
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-ocsp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let index = entries.map { entry in
            let expiry = Self.indexTime(entry.certificate.validity?.upperBound ?? 0)
            let revokedAt = entry.revoked ? Self.indexTime(Int64(Date().timeIntervalSince1970) - 3_600) : ""
            return [entry.revoked ? "R" : "V", expiry, revokedAt, String(format: "%02X", entry.serial), "unknown", "/CN=\(entry.subject)"]
                .joined(separator: "\t")
        }.joined(separator: "\n") + "\n"
        try index.write(to: directory.appendingPathComponent("index.txt"), atomically: true, encoding: .utf8)
        try issuer.pem.write(to: directory.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)
        try signer.pem.write(to: directory.appendingPathComponent("signer.pem"), atomically: true, encoding: .utf8)
        try #require(signerKey.pem).write(to: directory.appendingPathComponent("signer.key"), atomically: true, encoding: .utf8)

        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["ocsp", "-index", "index.txt", "-port", String(port), "-CA", "ca.pem",
                             "-rsigner", "signer.pem", "-rkey", "signer.key", "-nmin", "5", "-ignore_err"]
        process.currentDirectoryURL = directory
        let log = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = log
        try Subprocess.start(process)
        // Once listening, openssl logs "waiting for OCSP client connections" on (unbuffered)
        // stderr. Probing with a bare connect would not do: OpenSSL 3.0's responder spins on a
        // connection closed without a request.
        var printed = ""
        while !printed.contains("waiting for OCSP client connections") {
            let chunk = log.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            printed += String(decoding: chunk, as: UTF8.self)
        }
        try #require(printed.contains("waiting for OCSP client connections"), "openssl ocsp did not start: \(printed)")
    }

    func stop() {
        if process.isRunning {
            // SIGKILL: the child inherits the test runner's signal mask, so SIGTERM may be blocked.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }

    /// CA index time format: YYMMDDHHMMSSZ.
    private static func indexTime(_ seconds: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyMMddHHmmss'Z'"
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
    }

}
