import Config
import Testing
import Verifiers

/// `ConfigLoader.schema` (what `tollgate describe` prints for docs/configuration.md and the deploy
/// checks) is what the loader reads: every key it lists is accepted, with its default, through its
/// environment variable.
@Suite("Configuration schema")
struct ConfigSchemaTests {
    static let keys = (try? ConfigLoader.schema(senders: SenderCatalog.standard.configSections)) ?? []

    @Test("it lists the core and every sender's keys, with defaults and environment names")
    func listed() throws {
        let byKey = Dictionary(uniqueKeysWithValues: Self.keys.map { ($0.key, $0) })
        #expect(byKey["kafka.ackTimeoutMs"]?.defaultValue == .int(2_000))
        #expect(byKey["kafka.ackTimeoutMs"]?.environment == "TOLLGATE_KAFKA_ACK_TIMEOUT_MS")
        #expect(byKey["spool.path"]?.defaultValue == .text("./.tollgate/spool.sqlite"))
        #expect(byKey["sources.apple.onlineChecks"]?.defaultValue == .bool(false))
        #expect(byKey["sources.google.playApi.timeoutMs"]?.environment == "TOLLGATE_SOURCES_GOOGLE_PLAY_API_TIMEOUT_MS")
        for sender in SenderCatalog.standard.names {
            #expect(Self.keys.contains { $0.key.hasPrefix("sources.\(sender.rawValue).") }, "no key of \(sender.rawValue)")
        }
        #expect(Set(Self.keys.map(\.key)).count == Self.keys.count)
    }

    @Test("each key's default, given through its environment variable, is accepted and changes nothing")
    func defaultsRoundTrip() throws {
        let plain = try SenderCatalog.standard.parseConfig(yaml: "")
        for key in Self.keys {
            guard let variable = key.environment, let value = key.defaultValue else { continue }
            let text: String = switch value {
            case .text(let text): text
            case .int(let number): String(number)
            case .bool(let flag): String(flag)
            }
            let config = try SenderCatalog.standard.parseConfig(yaml: "", environment: [variable: text])
            #expect(config.kafka.ackTimeoutMs == plain.kafka.ackTimeoutMs && config.spool.path == plain.spool.path
                    && config.http.port == plain.http.port, "\(variable)=\(text)")
        }
    }
}
