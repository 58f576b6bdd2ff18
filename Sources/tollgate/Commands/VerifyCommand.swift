import ArgumentParser
import Config
import Events
import Foundation
import Rejections
import Toolkit
import Verifiers

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify and normalize one captured delivery offline, with the server's own code.",
        discussion: """
            Exit 0 and print the normalized events as a JSON array; exit 1 and print \
            {"error": "<reason code>", "message": ...} on stderr when rejected; exit 2 on usage or configuration errors. \
            With --show-response, an accepted delivery also prints on stderr the answer the gateway would send once \
            the events are durable: {"status", "headers", "body"} (e.g. Alipay+'s signed response headers). \
            An authentic delivery that is quarantined instead (Google: message data that is not an RTDN) exits 0, \
            prints [] and {"quarantined": "<reason>", "message": ...} on stderr. \
            For Google, pass the push's token with --header 'Authorization: Bearer ...' and its time with --at; \
            sources.google.jwks must be a file (verify makes no network calls).
            """)

    @Option(help: "The sender: \(SenderCatalog.standard.names.map(\.rawValue).joined(separator: ", ")).")
    var source: String

    @OptionGroup var options: ConfigOptions

    @Option(name: .customLong("header"), help: "A request header, 'Name: value' (repeatable).")
    var headers: [String] = []

    @Option(help: "The request path the sender called (default /webhooks/<source>).")
    var path: String?

    @Option(help: "RFC 3339 time to use as 'now' for time checks.")
    var at: String?

    @Flag(help: "On success, also print the sender's expected answer (status, headers, body) as JSON on stderr.")
    var showResponse = false

    @Argument(help: "The captured body, or - for standard input.")
    var bodyFile: String

    func run() async throws {
        let config = try options.load()
        var fields = HeaderFields()
        for header in headers {
            guard let colon = header.firstIndex(of: ":"), colon != header.startIndex else {
                throw ValidationError("--header must look like 'Name: value', got '\(header)'")
            }
            fields.append(name: String(header[..<colon]).trimmingCharacters(in: .whitespaces),
                          value: String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
        var now = Timestamp.now
        if let at {
            guard let parsed = Timestamp(rfc3339: at) else { throw ValidationError("--at must be an RFC 3339 time, got '\(at)'") }
            now = parsed
        }
        let body: Data
        if bodyFile == "-" {
            body = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let data = FileManager.default.contents(atPath: bodyFile) else {
                throw ValidationError("cannot read \(bodyFile)")
            }
            body = data
        }
        let sender: any WebhookSource
        do {
            // Offline by contract: Apple's certificates valid at signedDate, no OCSP; Google's key set from a file.
            sender = try SenderCatalog.standard.offlineSource(named: source, settings: config.sources)
        } catch {
            Output.error("tollgate: \(error)")
            throw ExitCode(2)
        }
        let request = WebhookRequest(path: path ?? "/webhooks/\(source)", headers: fields,
                                     body: Array(body), receivedAt: now, now: now)
        do throws(Rejection) {
            let delivery = try await sender.handle(request)
            Output.line(EventCoding.encodeArray(delivery.events, pretty: true))
            if let quarantine = delivery.quarantine {
                let object = ["quarantined": quarantine.reason, "message": quarantine.message]
                let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
                Output.error(String(decoding: data, as: UTF8.self))
            }
            if showResponse { Output.error(Self.describe(delivery.response)) }
        } catch {
            Output.error(String(decoding: error.jsonBody, as: UTF8.self))
            throw ExitCode(1)
        }
    }

    /// The answer as JSON: headers in order as `[name, value]` pairs, `Content-Type` first, body as text.
    static func describe(_ response: SenderResponse) -> String {
        var headers: [[String]] = response.contentType.map { [["Content-Type", $0]] } ?? []
        headers += response.headers.map { [$0.name, $0.value] }
        let object: [String: Any] = ["status": response.status, "headers": headers,
                                     "body": String(decoding: response.body, as: UTF8.self)]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
