import Foundation
import HTTPTypes
import Hummingbird
import Mustache
import Rejections

/// Renders the console's templates into answers: every page gets the console's base path, the signed-in
/// operator and the CSRF token its forms carry.
struct PageRenderer: Sendable {
    let library: MustacheLibrary
    let base: String

    init(base: String) throws {
        var library = MustacheLibrary()
        for (name, text) in Templates.all { try library.register(text, named: name) }
        self.library = library
        self.base = base
    }

    /// The page `template` with `values`, for `signedIn` (nil on the sign-in page).
    func page(_ template: String, title: String, signedIn: ConsoleOperator?, query: String = "", status: HTTPResponse.Status = .ok,
              _ values: [String: Any] = [:]) -> Response {
        var context = values
        context["base"] = base
        context["title"] = title
        context["query"] = query
        if let signedIn {
            context["signedIn"] = true
            context["operatorName"] = signedIn.name
            context["canAct"] = signedIn.canAct
            context["csrf"] = signedIn.csrfToken
        }
        let html = library.render(context, withTemplate: template) ?? ""
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    /// A refusal as a page: its reason code, its message and its status.
    func refusal(_ rejection: Rejection, signedIn: ConsoleOperator?) -> Response {
        var response = page("refusal", title: "Refused", signedIn: signedIn, status: HTTPResponse.Status(code: rejection.httpStatus),
                            ["heading": "Refused", "message": rejection.message, "reason": rejection.code])
        if let seconds = rejection.retryAfterSeconds { response.headers[.retryAfter] = String(seconds) }
        return response
    }

    func redirect(to path: String, cookie: String? = nil) -> Response {
        var headers = HTTPFields()
        headers[.location] = path
        if let cookie { headers[.setCookie] = cookie }
        return Response(status: .seeOther, headers: headers)
    }
}
