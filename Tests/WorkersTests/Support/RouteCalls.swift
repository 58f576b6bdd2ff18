import Hummingbird
import Logging
import NIOEmbedded
import ServiceHost

extension RouteGroup {
    /// What a server carrying this group answers `request`, without a socket: the group registered on a
    /// router of the server's context type, its middleware (credentials, refusals) and its handler.
    func respond(_ request: Request) async throws -> Response {
        let router = Router(context: BasicRequestContext.self)
        register(on: router)
        let context = BasicRequestContext(source: ApplicationRequestContextSource(channel: EmbeddedChannel(), logger: Logger(label: "route-calls")))
        return try await router.buildResponder().respond(to: request, context: context)
    }
}
