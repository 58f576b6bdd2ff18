import ArgumentParser
import Config
import Events
import Foundation
import Kafka

/// What every operator command needs: the configuration and where the cluster is.
struct OperatorOptions: ParsableArguments {
    @OptionGroup var options: ConfigOptions

    @Option(help: "Bootstrap servers (default: kafka.brokers, else the file `tollgate dev` writes, .tollgate/bootstrap).")
    var brokers: String?

    func load() throws -> (config: TollgateConfig, client: KafkaClientConfig) {
        let config = try options.load()
        let file = (try? String(contentsOfFile: ".tollgate/bootstrap", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let servers = brokers ?? config.kafka.brokers ?? file.flatMap({ $0.isEmpty ? nil : $0 }) else {
            Output.error("tollgate: no brokers: pass --brokers, set kafka.brokers, or start `tollgate dev` in this directory")
            throw ExitCode(2)
        }
        var client = config.kafka.client(brokers: servers)
        client.clientId = "tollgate-cli"
        return (config, client)
    }
}

/// A point in time on the command line: RFC 3339, or an age such as `30m`, `24h`, `7d` (that long ago).
struct TimeArgument: ExpressibleByArgument, Sendable {
    let milliseconds: Int64

    init?(argument: String) {
        if let time = Timestamp(rfc3339: argument) {
            milliseconds = time.millisecondsSince1970
            return
        }
        let units: [Character: Int64] = ["s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000]
        guard let unit = argument.last.flatMap({ units[$0] }), let count = Int64(argument.dropLast()), count >= 0 else { return nil }
        milliseconds = Timestamp.now.millisecondsSince1970 - count * unit
    }

    static var defaultCompletionKind: CompletionKind { .default }
}

