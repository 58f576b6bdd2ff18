import Foundation
import TestSupport
import Testing

@Suite("Start-up and the embedded broker")
struct StartupTests {
    @Test("serve refuses to start on an unknown key, naming it")
    func unknownKey() async throws {
        let config = try CLI.temporaryFile("tollgate.yaml", "kafka: { brokers: 127.0.0.1:1, ackTimeoutMS: 5 }")
        let result = try await CLI.run(["serve", "--config", config])
        #expect(result.status == 2)
        #expect(result.stderr.contains("kafka.ackTimeoutMS"))
    }

    @Test("serve refuses to start on a bad environment value, naming it")
    func badEnvironment() async throws {
        let result = try await CLI.run(["serve"], environment: ["TOLLGATE_KAFKA_BROKERS": "127.0.0.1:1", "TOLLGATE_HTTP_PORT": "http"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("http.port"))
    }

    @Test("work refuses an unknown TOLLGATE_ variable")
    func unknownEnvironment() async throws {
        let result = try await CLI.run(["work"], environment: ["TOLLGATE_KAFKA_BROKER": "127.0.0.1:1"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("TOLLGATE_KAFKA_BROKER"))
    }

    @Test("work refuses to start when a purchases.receiptRootCertificates file cannot be read, naming its key")
    func unreadableReceiptRoot() async throws {
        let folder = URL(fileURLWithPath: try CLI.temporaryFile("tollgate.yaml", "")).deletingLastPathComponent()
        let config = folder.appendingPathComponent("tollgate.yaml").path
        try Data("""
            kafka: { brokers: 127.0.0.1:1 }
            store: { url: "sqlite:\(folder.path)/tollgate.sqlite" }
            purchases: { receiptRootCertificates: ["\(folder.path)/missing-root.pem"] }
            """.utf8).write(to: URL(fileURLWithPath: config))
        let result = try await CLI.run(["work", "--config", config])
        #expect(result.status != 0)
        #expect(result.stderr.contains("purchases.receiptRootCertificates[0]"), "\(result.stderr)")
        #expect(!result.stdout.contains("listening"))
        // Refused before anything opened: no store was made.
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("tollgate.sqlite").path))
    }

    @Test("tollgate broker writes its bootstrap servers and serves independent clients with every topic")
    func broker() async throws {
        let portFile = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-broker-\(UUID().uuidString)").path
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["broker", "--brokers", "3", "--port-file", portFile]
        process.standardOutput = Pipe()
        process.currentDirectoryURL = FileManager.default.temporaryDirectory
        try Subprocess.start(process)
        defer { if process.isRunning { process.terminate() } }

        var bootstrap = ""
        for _ in 0..<100 where bootstrap.isEmpty {
            try await Task.sleep(for: .milliseconds(100))
            bootstrap = (try? String(contentsOfFile: portFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        }
        #expect(bootstrap.split(separator: ",").count == 3)

        let metadata = try await runKcat(["-b", bootstrap, "-L"])
        for topic in ["tollgate.events", "tollgate.raw.iaptic", "tollgate.events-dlt", "tollgate.entitlements"] {
            #expect(metadata.contains("topic \"\(topic)\""), "\(topic)")
        }
        // An independent producer and consumer round-trip through it, headers included.
        _ = try await runKcat(["-b", bootstrap, "-P", "-t", "tollgate.quarantine", "-k", "k", "-H", "why=test"], stdin: "hello")
        let read = try await runKcat(["-b", bootstrap, "-C", "-t", "tollgate.quarantine", "-o", "beginning", "-c", "1", "-e", "-q",
                                "-f", "%k|%h|%s"])
        #expect(read == "k|why=test|hello")

        process.terminate()
        await offPool { process.waitUntilExit() }
        #expect(process.terminationReason == .exit)
    }

    func runKcat(_ arguments: [String], stdin: String? = nil) async throws -> String {
        try await Subprocess.run("/usr/bin/kcat", arguments, stdin: stdin.map { Data($0.utf8) }).output
    }
}
