@testable import ServiceHost
import Testing

/// The route table behind every server's 405 answers: exact paths and `:name` templates.
@Suite("Route methods for 405 answers")
struct RouteMethodsTests {
    let routes = RouteMethods(["/healthz": [.get, .head], "/webhooks/citcon": [.post], "/webhooks/citcon/:account": [.post],
                               "/v1/users/:user/entitlements": [.get]])

    @Test("exact paths and templates with one non-empty segment per parameter match; nothing else does")
    func matching() {
        #expect(routes.allowed("/healthz") == [.get, .head])
        #expect(routes.allowed("/webhooks/citcon/shop") == [.post])
        #expect(routes.allowed("/v1/users/u-1/entitlements") == [.get])
        #expect(routes.allowed("/v1/users//entitlements") == nil)
        #expect(routes.allowed("/v1/users/a/b/entitlements") == nil)
        #expect(routes.allowed("/webhooks/citcon/shop/more") == nil)
        #expect(routes.allowed("/webhooks/other") == nil)
        #expect(routes.allowed("/healthz/") == nil)
    }
}
