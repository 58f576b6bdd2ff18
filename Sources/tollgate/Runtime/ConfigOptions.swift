import ArgumentParser
import Config
import Events
import Foundation
import Verifiers

struct ConfigOptions: ParsableArguments {
    @Option(name: .long, help: "YAML configuration file (default: ./tollgate.yaml if present).")
    var config: String?

    /// The validated configuration; a configuration error prints its key and exits 2.
    func load() throws -> TollgateConfig {
        do {
            return try SenderCatalog.standard.loadConfig(path: config)
        } catch {
            Output.error("tollgate: \(error)")
            throw ExitCode(2)
        }
    }
}

enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
