import ArgumentParser
import Config
import Events
import Kafka

struct TopicsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "topics", abstract: "Manage Tollgate's topics.",
                                                    subcommands: [Create.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract: "Create every topic with its partitions, replication, retention and compaction (existing ones are kept).")

        @OptionGroup var options: ConfigOptions

        func run() async throws {
            let config = try options.load()
            guard let brokers = config.kafka.brokers else {
                Output.error("tollgate: configuration error: kafka.brokers: is required (the embedded broker creates its topics itself)")
                throw ExitCode(2)
            }
            let specs = TopicPlan.specs(config)
            let admin = try KafkaAdmin(client: config.kafka.client(brokers: brokers))
            do {
                let outcomes = try await admin.createTopics(specs)
                for spec in specs {
                    Output.line("\(spec.name): \(outcomes[spec.name] == .alreadyExists ? "exists" : "created")")
                }
            } catch {
                Output.error("tollgate: \(error)")
                throw ExitCode(1)
            }
        }
    }
}

/// Partitions, replication and retention per topic (docs/topics.md explains the choices).
enum TopicPlan {
    static let day = 86_400_000

    static func specs(_ config: TollgateConfig) -> [TopicSpec] {
        let kafka = config.kafka, names = config.topicNames
        return names.all.map { topic in
            var config: [String: String] = ["min.insync.replicas": String(min(2, kafka.replicationFactor))]
            if topic.compacted {
                config["cleanup.policy"] = "compact"
            } else if topic.name == names.events || topic.name.hasPrefix(names.retry(delayMs: 0).dropLast()) {
                config["retention.ms"] = String(7 * day)
            } else {
                config["retention.ms"] = String(30 * day)
            }
            return TopicSpec(name: topic.name, partitions: kafka.partitions, replicationFactor: kafka.replicationFactor, config: config)
        }
    }
}
