import Verifiers

/// A sender's load traffic (defined in the sender's folder, `SenderDefinition.loadTraffic`) with the
/// name the results use.
struct SenderTraffic {
    let source: String
    let traffic: any LoadTraffic

    var checksPerRequest: Int { traffic.checksPerRequest }
    var algorithm: String? { traffic.algorithm }

    func request(_ index: Int, run: String) -> LoadRequest { traffic.request(index, run: run) }

    /// The traffic of the sender `name`, signed with what `tollgate-load prepare` wrote into `directory`.
    static func load(_ name: String, directory: String) throws -> SenderTraffic {
        SenderTraffic(source: name, traffic: try SenderCatalog.standard.loadTraffic(named: name, directory: directory))
    }
}
