import Events
import Foundation
import Merchant
import ProviderAPIs
import TestSupport
import Toolkit
import Verifiers
import Workers
#if canImport(Glibc)
import Glibc
#endif

/// One `tollgate dev` (embedded broker, gateway, workers) running in a fresh working directory, as a
/// developer starts it: its store and `.tollgate/bootstrap` live there, so operator commands run in
/// the same directory find both. The configuration trusts a generated Apple-shaped chain.
final class DevProcess: @unchecked Sendable {
    // @unchecked: `child` is only touched by `start` and `stop`, which the suite's scope calls once each.

    /// The process the running suite shares (set by `SharedDevProcess`).
    @TaskLocal static var current: DevProcess?

    static let apiToken = "cli-tests-api-token-0123456789"
    /// A token limited to `limitedTokenApp` (`api.tokens` long form).
    static let limitedToken = "cli-tests-limited-token-0123456789"
    static let limitedTokenApp = "com.example.other"
    static let bundleId = "com.example.cli"
    /// The app's embedded (public) credential, and the key its backend signs user tokens with.
    static let clientToken = "cli-tests-client-token-public"
    static let userTokenKey = PrivateKey.generateP256()!

    /// A user token for `user`, as the merchant's backend would sign it.
    static func userToken(_ user: String, app: String = bundleId) -> String {
        UserTokenSigner.sign(user: user, app: app, key: userTokenKey, nowMs: Timestamp.now.millisecondsSince1970)!
    }

    let directory: URL
    let configPath: String
    let chain: AppleTestChain
    /// `http://127.0.0.1:<port>`, the gateway and the entitlement API.
    let baseURL: String
    let bootstrap: String
    /// The Apple deliveries the gateway accepted in this run.
    let appleDeliveries = DeliveryLog()
    private let child: ChildProcess

    private init(directory: URL, configPath: String, chain: AppleTestChain, baseURL: String, bootstrap: String,
                 child: ChildProcess) {
        self.directory = directory
        self.configPath = configPath
        self.chain = chain
        self.baseURL = baseURL
        self.bootstrap = bootstrap
        self.child = child
    }

    static func start() async throws -> DevProcess {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-dev-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let chain = try AppleTestChain()
        let rootPath = directory.appendingPathComponent("apple-root.pem").path
        try Data(chain.root.pem.utf8).write(to: URL(fileURLWithPath: rootPath))
        let userTokenKeyPath = directory.appendingPathComponent("user-token.pub.pem").path
        try Data((userTokenKey.publicKeyPEM ?? "").utf8).write(to: URL(fileURLWithPath: userTokenKeyPath))
        // Port 0: the kernel picks a free one and `dev` prints it. The store stays at its default,
        // ./.tollgate/tollgate.sqlite, relative to the working directory.
        let config = """
            http: { host: 127.0.0.1, port: 0 }
            api:
              tokens: [\(apiToken), { token: \(limitedToken), apps: [\(limitedTokenApp)] }, { token: \(clientToken), kind: client, apps: [\(bundleId)] }]
              userTokenKeys: { \(bundleId): \(userTokenKeyPath) }
            log: { level: info }
            sources:
              apple:
                roots: [\(rootPath)]
                apps: [{ bundleId: \(bundleId), appAppleId: 1234, environments: [Sandbox] }]
            """
        let configPath = directory.appendingPathComponent("tollgate.yaml").path
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))

        // Output goes to a file, never a pipe: nobody has to drain it for the process to go on.
        let child = try ChildProcess(["dev", "--config", configPath], directory: directory, name: "dev")
        do {
            let port = try await child.gatewayPort()
            let bootstrapFile = directory.appendingPathComponent(".tollgate/bootstrap")
            let bootstrap = try await CLITests.eventually("tollgate dev writes .tollgate/bootstrap") { () -> String? in
                let text = (try? String(contentsOf: bootstrapFile, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
                return text?.isEmpty == false ? text : nil
            }
            return DevProcess(directory: directory, configPath: configPath, chain: chain, baseURL: "http://127.0.0.1:\(port)",
                              bootstrap: bootstrap, child: child)
        } catch {
            await Self.terminate(child)
            throw error
        }
    }

    /// `gateway: listening on http://HOST:PORT ...` -> PORT.
    static func listeningPort(in output: String) -> Int? {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("gateway: listening on http://") }) else { return nil }
        let address = line.dropFirst("gateway: listening on http://".count).prefix { $0 != " " }
        return address.split(separator: ":").last.flatMap { Int($0) }
    }

    /// SIGTERM, then the directory goes. Returns what went wrong when the process did not shut down
    /// gracefully: exit status 0 within 20 s.
    func stop() async -> String? {
        let problem: String?
        if !child.isRunning {
            problem = "tollgate dev had exited already:\n\(diagnostics)"
        } else {
            let graceful = await Self.terminate(child)
            problem = graceful && child.exitedCleanly ? nil
                : "tollgate dev did not shut down cleanly on SIGTERM:\n\(diagnostics)"
        }
        try? FileManager.default.removeItem(at: directory)
        return problem
    }

    /// True when the process exited within 20 s of SIGTERM; otherwise it is killed.
    @discardableResult
    private static func terminate(_ child: ChildProcess) async -> Bool {
        guard child.isRunning else { return true }
        child.signal(SIGTERM)
        if await child.waitForExit(within: .seconds(20)) != nil { return true }
        await child.crash()
        return false
    }

    /// The end of the process's output, for failure messages.
    var diagnostics: String {
        "tollgate dev is \(child.isRunning ? "running" : "not running"); its output ends with:\n\(child.output.suffix(3_000))"
    }

    /// Runs `tollgate <arguments> --config <its config>` in the process's directory.
    func cli(_ arguments: [String]) async throws -> CLI.Result {
        try await CLI.run(arguments + ["--config", configPath], directory: directory)
    }

    /// `eventually`, with the process's state and output in the failure.
    func eventually<T: Sendable>(_ what: String, within timeout: Duration = .seconds(30),
                                 _ probe: () async throws -> T?) async throws -> T {
        do {
            return try await CLITests.eventually(what, within: timeout, probe)
        } catch let failure as DevFailure {
            throw DevFailure("\(failure.description)\n\(diagnostics)")
        }
    }
}

/// Apple notifications the gateway accepted (200), by notificationUUID, in order.
actor DeliveryLog {
    private(set) var notificationUUIDs: [String] = []
    /// Those that change no purchase (TEST notifications): the projection never records them as
    /// applied, so a replay finds them `unchanged` again rather than `duplicate`.
    private(set) var stateless: Set<String> = []

    func append(_ uuid: String, changesPurchases: Bool = true) {
        notificationUUIDs.append(uuid)
        if !changesPurchases { stateless.insert(uuid) }
    }

    /// The ce_ids their events carry: `apple:<notificationUUID>`.
    var eventIds: [String] { notificationUUIDs.map { "apple:\($0)" } }
    /// The ce_ids of those that change a purchase.
    var purchaseEventIds: [String] { notificationUUIDs.filter { !stateless.contains($0) }.map { "apple:\($0)" } }
}

/// Runs `body` against a `tollgate dev` of its own, started with `configPath` in `directory`, given the
/// gateway's base URL; the process gets SIGTERM however `body` ends, and a failure carries its output.
func withOwnDev(configPath: String, directory: URL, arguments: [String] = [], environment: [String: String] = [:],
                _ body: (String) async throws -> Void) async throws {
    try await withOwnDev(configPath: configPath, directory: directory, arguments: arguments, environment: environment) { local, _ in try await body(local) }
}

/// The same, with the process itself (its output so far) for `body`.
func withOwnDev(configPath: String, directory: URL, arguments: [String] = [], environment: [String: String] = [:],
                _ body: (String, ChildProcess) async throws -> Void) async throws {
    let child = try ChildProcess(["dev", "--config", configPath] + arguments, directory: directory, name: "dev", environment: environment)
    let result: Result<Void, any Error>
    do {
        try await body("http://127.0.0.1:\(try await child.gatewayPort())", child)
        result = .success(())
    } catch {
        result = .failure(DevFailure("\(error)\n\(child.output.suffix(3_000))"))
    }
    child.signal(SIGTERM)
    if await child.waitForExit(within: .seconds(20)) == nil { await child.crash() }
    try result.get()
}

struct DevFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Polls `probe` until it returns a value (errors count as "not yet"), failing after `timeout` with
/// the last error: the tests assert on what eventually holds, never on how long it took.
func eventually<T: Sendable>(_ what: String, within timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(200),
                             _ probe: () async throws -> T?) async throws -> T {
    let deadline = ContinuousClock.now + timeout
    var lastError: (any Error)?
    while true {
        do {
            if let value = try await probe() { return value }
        } catch let error as DevFailure {
            throw error
        } catch {
            lastError = error
        }
        guard ContinuousClock.now < deadline else {
            throw DevFailure("timed out after \(timeout) waiting until \(what)" + (lastError.map { " (last error: \($0))" } ?? ""))
        }
        try await Task.sleep(for: interval)
    }
}
