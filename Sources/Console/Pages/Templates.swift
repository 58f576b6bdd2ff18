/// The console's pages, as Mustache templates shipped in the binary. Every value goes through `{{...}}`,
/// which escapes HTML (`&`, `<`, `>`, `"`, `'`): sender payloads are hostile, so no template uses the
/// unescaped forms (`{{{...}}}`, `{{&...}}`); ConsoleTests hold that. No script, no inline style.
enum Templates {
    static let all: [String: String] = [
        "head": head, "foot": foot, "signIn": signIn, "overview": overview, "search": search, "user": user,
        "purchase": purchase, "refusal": refusal, "deadLetters": deadLetters, "deadLetter": deadLetter, "confirm": confirm,
        "result": result, "endpoints": endpoints, "audit": audit, "rawDelivery": rawDelivery, "sender": sender, "list": list,
    ]

    static let head = """
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>{{title}} · Tollgate</title>
    <link rel="stylesheet" href="{{base}}/style.css">
    </head>
    <body>
    <header>
    <a class="brand" href="{{base}}">Tollgate</a>
    {{#signedIn}}
    <nav aria-label="Pages">
    <a href="{{base}}">Overview</a>
    <a href="{{base}}/dead-letters">Dead letters</a>
    <a href="{{base}}/endpoints">Endpoints</a>
    <a href="{{base}}/audit">Audit</a>
    </nav>
    <form class="search" method="get" action="{{base}}/search" role="search">
    <label for="q">Find</label>
    <input id="q" name="q" type="search" value="{{query}}" placeholder="user, purchase, transaction, order or checkout id" maxlength="512">
    <button type="submit">Search</button>
    </form>
    <form class="signout" method="post" action="{{base}}/sign-out">
    <input type="hidden" name="csrf" value="{{csrf}}">
    <span class="who">{{operatorName}}{{^canAct}} (read-only){{/canAct}}</span>
    <button type="submit">Sign out</button>
    </form>
    {{/signedIn}}
    </header>
    <main>
    """

    static let foot = """
    </main>
    </body>
    </html>
    """

    static let signIn = """
    {{> head}}
    <h1>Sign in</h1>
    {{#message}}<p class="refusal" role="alert">{{message}}</p>{{/message}}
    <form method="post" action="{{base}}/sign-in" class="card">
    <label for="credential">Operator credential</label>
    <input id="credential" name="credential" type="password" autocomplete="current-password" required autofocus maxlength="1024">
    <button type="submit">Sign in</button>
    </form>
    {{> foot}}
    """

    static let overview = """
    {{> head}}
    <h1>Overview</h1>
    <section class="totals">
    <div class="card"><a href="{{base}}/purchases"><span class="number">{{purchases}}</span> purchases</a></div>
    <div class="card"><a href="{{base}}/entitlements"><span class="number">{{activeEntitlements}}</span> active entitlements</a></div>
    <div class="card"><a href="{{base}}/dead-letters"><span class="number">{{deadLettersWaiting}}</span> dead letters waiting</a></div>
    <div class="card"><a href="{{base}}/endpoints"><span class="number">{{outboundWaiting}}</span> outbound messages waiting, {{outboundParked}} parked</a></div>
    </section>
    {{#windows}}
    <section>
    <h2>Events applied, last {{label}}</h2>
    {{^rows}}<p>None.</p>{{/rows}}
    {{#hasRows}}
    <table>
    <thead><tr><th scope="col">Sender</th><th scope="col">Applied</th><th scope="col">Unchanged</th><th scope="col"><span class="visually-hidden">Share</span></th></tr></thead>
    <tbody>
    {{#rows}}
    <tr><th scope="row">{{source}}</th><td>{{applied}}</td><td>{{unchanged}}</td>
    <td><svg class="bar" viewBox="0 0 100 8" width="100" height="8" role="img" aria-label="{{applied}} applied, {{unchanged}} unchanged"><rect class="applied" x="0" y="0" width="{{appliedWidth}}" height="8"></rect><rect class="unchanged" x="{{appliedWidth}}" y="0" width="{{unchangedWidth}}" height="8"></rect></svg></td></tr>
    {{/rows}}
    </tbody>
    </table>
    {{/hasRows}}
    </section>
    {{/windows}}
    {{#hasServiceNumbers}}
    <section>
    <h2>Deliveries at the gateway</h2>
    <p>From <code>/metrics</code>: {{sourcesRead}} of {{sourcesConfigured}} source(s) answered{{#sampledSince}}; counted since {{sampledSince}}, when sampling began{{/sampledSince}}.</p>
    {{#kafkaUnreachable}}<p class="refusal">Kafka does not answer: {{kafkaUnreachable}}.</p>{{/kafkaUnreachable}}
    {{^hasSenderRows}}<p>No sender has reported yet.</p>{{/hasSenderRows}}
    {{#hasSenderRows}}
    <table>
    <thead><tr><th scope="col">Sender</th><th scope="col">Accepted, hour</th><th scope="col">Accepted, day</th><th scope="col">Refused, hour</th><th scope="col">Refused, day</th><th scope="col"><span class="visually-hidden">Share of the day</span></th><th scope="col">Silence</th></tr></thead>
    <tbody>
    {{#senderRows}}
    <tr><th scope="row"><a href="{{href}}">{{source}}</a></th><td><a href="{{href}}">{{acceptedHour}}</a></td><td><a href="{{href}}">{{acceptedDay}}</a></td><td><a href="{{href}}">{{rejectedHour}}</a></td><td><a href="{{href}}">{{rejectedDay}}</a></td>
    <td><svg class="bar" viewBox="0 0 100 8" width="100" height="8" role="img" aria-label="{{acceptedDay}} accepted, {{rejectedDay}} refused today"><rect class="applied" x="0" y="0" width="{{acceptedWidth}}" height="8"></rect><rect class="refused" x="{{acceptedWidth}}" y="0" width="{{rejectedWidth}}" height="8"></rect></svg></td>
    <td{{#silent}} class="denied"{{/silent}}>{{silence}}</td></tr>
    {{/senderRows}}
    </tbody>
    </table>
    {{/hasSenderRows}}
    <dl class="facts">
    <dt>Spool</dt><dd>{{#spool}}{{spool}}{{/spool}}{{^spool}}not reported{{/spool}}</dd>
    <dt>Consumer lag</dt><dd>{{^hasLag}}not reported{{/hasLag}}{{#lag}}{{topic}}: {{records}} records<br>{{/lag}}</dd>
    </dl>
    </section>
    {{/hasServiceNumbers}}
    {{> foot}}
    """

    static let list = """
    {{> head}}
    <h1>{{heading}}</h1>
    <p>{{note}}</p>
    {{^hasRows}}<p>None.</p>{{/hasRows}}
    {{#hasRows}}
    <table>
    <thead><tr>{{#columns}}<th scope="col">{{name}}</th>{{/columns}}</tr></thead>
    <tbody>
    {{#rows}}<tr>{{#cells}}<td>{{#href}}<a href="{{href}}">{{text}}</a>{{/href}}{{^href}}{{text}}{{/href}}</td>{{/cells}}</tr>{{/rows}}
    </tbody>
    </table>
    {{/hasRows}}
    {{> foot}}
    """

    static let sender = """
    {{> head}}
    <h1>Sender {{source}}</h1>
    <p>From the gateway's <code>/metrics</code>{{#sampledSince}}, counted since {{sampledSince}}, when sampling began{{/sampledSince}}. {{silence}}.</p>
    <table>
    <thead><tr><th scope="col"></th><th scope="col">Last hour</th><th scope="col">Last day</th></tr></thead>
    <tbody>
    <tr><th scope="row">Accepted</th><td>{{acceptedHour}}</td><td>{{acceptedDay}}</td></tr>
    {{#reasons}}<tr><th scope="row">Refused: <code>{{reason}}</code></th><td>{{hour}}</td><td>{{day}}</td></tr>{{/reasons}}
    </tbody>
    </table>
    {{^hasReasons}}<p>No delivery refused.</p>{{/hasReasons}}
    <p>Each reason is explained in <code>tollgate describe</code> and docs/senders; the gateway's log names each refused delivery.</p>
    {{> foot}}
    """

    static let search = """
    {{> head}}
    <h1>Search</h1>
    {{^results}}<p>Nothing matches “{{query}}”: try a user id, a purchase id, an Apple transaction id, a Google order id or a checkout id.</p>{{/results}}
    {{#hasResults}}
    <ul class="results">
    {{#results}}<li><a href="{{href}}">{{label}}</a></li>{{/results}}
    </ul>
    {{/hasResults}}
    {{> foot}}
    """

    static let user = """
    {{> head}}
    <h1>User <span class="id">{{userId}}</span></h1>
    {{#groups}}
    <section>
    <h2>{{app}} · {{environment}}</h2>
    <h3>Entitlements</h3>
    {{^entitlements}}<p>None: no purchase of this user entitles a product here.</p>{{/entitlements}}
    {{#hasEntitlements}}
    <table>
    <thead><tr><th scope="col">Product</th><th scope="col">State</th><th scope="col">Access</th><th scope="col">Until</th><th scope="col">Decided by</th></tr></thead>
    <tbody>
    {{#entitlements}}
    <tr><td>{{product}}</td><td>{{state}}</td><td class="{{accessClass}}">{{access}}</td><td>{{until}}</td><td><a href="{{purchaseHref}}">purchase</a></td></tr>
    {{/entitlements}}
    </tbody>
    </table>
    {{/hasEntitlements}}
    <h3>Purchases</h3>
    <table>
    <thead><tr><th scope="col">Purchase</th><th scope="col">Product</th><th scope="col">State</th><th scope="col">Expires</th><th scope="col">Last event</th></tr></thead>
    <tbody>
    {{#purchases}}
    <tr><td><a href="{{href}}">{{source}} {{shortId}}</a></td><td>{{product}}</td><td>{{state}}</td><td>{{expires}}</td><td>{{lastEvent}}</td></tr>
    {{/purchases}}
    </tbody>
    </table>
    </section>
    {{/groups}}
    {{> foot}}
    """

    static let purchase = """
    {{> head}}
    <h1>Purchase <span class="id">{{purchaseId}}</span></h1>
    <dl class="facts">
    <dt>Sender</dt><dd>{{source}}</dd>
    <dt>App</dt><dd>{{app}} · {{environment}}</dd>
    <dt>Product</dt><dd>{{product}}</dd>
    <dt>State</dt><dd>{{state}}</dd>
    <dt>Expires</dt><dd>{{expires}}</dd>
    <dt>User</dt><dd>{{#userHref}}<a href="{{userHref}}">{{user}}</a>{{/userHref}}{{^userHref}}none{{/userHref}}</dd>
    {{#supersededBy}}<dt>Superseded by</dt><dd><a href="{{supersededHref}}">{{supersededBy}}</a></dd>{{/supersededBy}}
    <dt>Last read from its store</dt><dd>{{#lastRefresh}}{{lastRefresh}}{{/lastRefresh}}{{^lastRefresh}}never{{/lastRefresh}}</dd>
    </dl>
    {{#deliveriesUnknown}}<p class="refusal">The outbound deliveries cannot be read now.</p>{{/deliveriesUnknown}}
    {{#canAct}}
    <p class="actions"><a class="button" href="{{base}}/purchases/{{purchaseId}}/refresh">Refresh from its store…</a>
    {{#endpoints}}<a class="button" href="{{base}}/endpoints/{{name}}/replay?purchase={{purchaseId}}">Send again to {{name}}…</a>{{/endpoints}}</p>
    {{/canAct}}
    {{#hasStoreCalls}}
    <h2>Calls to its store</h2>
    <table>
    <thead><tr><th scope="col">When</th><th scope="col">Call</th><th scope="col">Outcome</th><th scope="col">Detail</th></tr></thead>
    <tbody>
    {{#storeCalls}}<tr><td>{{at}}</td><td><code>{{call}}</code></td><td>{{outcome}}</td><td>{{detail}}</td></tr>{{/storeCalls}}
    </tbody>
    </table>
    {{/hasStoreCalls}}
    <h2>Story</h2>
    {{^steps}}<p>No history kept for this purchase (kept for console.historyDays after each event).</p>{{/steps}}
    <ol class="story">
    {{#steps}}
    <li id="event-{{index}}" class="step {{outcome}}">
    <h3>{{type}} <span class="outcome">{{outcome}}</span></h3>
    <dl class="facts">
    <dt>Occurred</dt><dd>{{occurredAt}}</dd>
    <dt>Received</dt><dd>{{receivedAt}}</dd>
    <dt>Event id</dt><dd class="id">{{eventId}}</dd>
    {{#transactionId}}<dt>Transaction</dt><dd class="id">{{transactionId}}</dd>{{/transactionId}}
    {{#position}}<dt>Record</dt><dd>{{position}}</dd>{{/position}}
    {{#stateAfter}}<dt>Purchase after</dt><dd>{{stateAfter}}</dd>{{/stateAfter}}
    </dl>
    {{#hasArrivals}}
    <h4>Delivered by the sender</h4>
    <ul>
    {{#arrivals}}<li><a href="{{href}}">{{source}} {{position}}</a>: received {{receivedAt}}, verified by the gateway{{#scope}} ({{scope}}){{/scope}}, {{bytes}} bytes
    {{#body}}<details><summary>Body as delivered</summary><pre>{{body}}</pre></details>{{/body}}</li>{{/arrivals}}
    </ul>
    {{/hasArrivals}}
    {{#hasEntitlements}}
    <h4>Entitlements it left</h4>
    <ul>
    {{#entitlements}}<li><a href="{{userHref}}">{{user}}</a> · {{product}}: {{state}}, {{access}}{{#transfer}} ({{transfer}}){{/transfer}}</li>{{/entitlements}}
    </ul>
    {{/hasEntitlements}}
    {{#hasDeliveries}}
    <h4>Sent to endpoints</h4>
    <ul>
    {{#deliveries}}<li>{{endpoint}}: {{status}} after {{attempts}} attempt(s), {{updatedAt}} <span class="id">{{messageId}}</span> ({{user}} · {{product}})</li>{{/deliveries}}
    </ul>
    {{/hasDeliveries}}
    <details><summary>Normalized event</summary><pre>{{eventJSON}}</pre></details>
    </li>
    {{/steps}}
    </ol>
    {{> foot}}
    """

    static let refusal = """
    {{> head}}
    <h1>{{heading}}</h1>
    <p class="refusal" role="alert">{{message}}</p>
    <p>Reason: <code>{{reason}}</code></p>
    <p><a href="{{base}}">Back to the overview</a></p>
    {{> foot}}
    """

    static let deadLetters = """
    {{> head}}
    <h1>Dead letters</h1>
    <p>Events the workers could not apply after their retries, oldest first. Replaying one publishes it again to the topic it failed on, once.</p>
    <h2>Waiting ({{waitingCount}})</h2>
    {{^waiting}}<p>None.</p>{{/waiting}}
    {{#hasWaiting}}
    <table>
    <thead><tr><th scope="col">Position</th><th scope="col">Time</th><th scope="col">Type</th><th scope="col">Subject</th><th scope="col">Error</th></tr></thead>
    <tbody>
    {{#waiting}}<tr><td><a href="{{base}}/dead-letters/{{position}}">{{position}}</a></td><td>{{time}}</td><td>{{type}}</td><td class="id">{{subject}}</td><td>{{error}}</td></tr>{{/waiting}}
    </tbody>
    </table>
    {{/hasWaiting}}
    {{#hasReplayed}}
    <h2>Replayed</h2>
    <table>
    <thead><tr><th scope="col">Position</th><th scope="col">Time</th><th scope="col">Type</th><th scope="col">Replays</th></tr></thead>
    <tbody>
    {{#replayed}}<tr><td><a href="{{base}}/dead-letters/{{position}}">{{position}}</a></td><td>{{time}}</td><td>{{type}}</td><td>{{replays}}</td></tr>{{/replayed}}
    </tbody>
    </table>
    {{/hasReplayed}}
    {{> foot}}
    """

    static let deadLetter = """
    {{> head}}
    <h1>Dead letter {{position}}</h1>
    <dl class="facts">
    <dt>Time</dt><dd>{{time}}</dd>
    <dt>Event id</dt><dd class="id">{{eventId}}</dd>
    <dt>Type</dt><dd>{{type}}</dd>
    <dt>Subject</dt><dd class="id">{{subject}}</dd>
    <dt>Error</dt><dd>{{error}}</dd>
    <dt>Replayed</dt><dd>{{replays}} time(s)</dd>
    </dl>
    {{#canAct}}
    <section class="card">
    <h2>Replay</h2>
    <p>Dry run: {{preview}}</p>
    <form method="post" action="{{base}}/dead-letters/{{position}}/replay">
    <input type="hidden" name="csrf" value="{{csrf}}">
    <button type="submit">Replay now</button>
    </form>
    </section>
    {{/canAct}}
    <h2>Headers</h2>
    <table><tbody>{{#headers}}<tr><th scope="row">{{name}}</th><td class="id">{{value}}</td></tr>{{/headers}}</tbody></table>
    <h2>Body</h2>
    <pre>{{body}}</pre>
    {{> foot}}
    """

    static let rawDelivery = """
    {{> head}}
    <h1>Delivery {{source}} {{position}}</h1>
    <p>A delivery the gateway verified and wrote to its raw topic, as it arrived. Fields that may be credentials are withheld here.</p>
    <dl class="facts">
    <dt>Sender</dt><dd>{{source}}</dd>
    <dt>Received</dt><dd>{{receivedAt}}</dd>
    <dt>Verification</dt><dd>verified by the gateway{{#scope}} ({{scope}}){{/scope}}</dd>
    {{#path}}<dt>Path</dt><dd>{{path}}</dd>{{/path}}
    <dt>Raw record</dt><dd>partition:offset {{position}}, {{bytes}} bytes</dd>
    </dl>
    <h2>Events it carried</h2>
    {{^hasEvents}}<p>None recorded (the index keeps deliveries for console.historyDays).</p>{{/hasEvents}}
    <ul>
    {{#events}}<li><span class="id">{{eventId}}</span>{{#purchases}} · <a href="{{href}}">{{id}}</a>{{/purchases}}</li>{{/events}}
    </ul>
    {{#gone}}<p class="refusal">The raw topic no longer keeps this record (its retention).</p>{{/gone}}
    {{#unreadable}}<p class="refusal">The raw topic cannot be read now; try again shortly.</p>{{/unreadable}}
    {{#preview}}
    <section class="card">
    <h2>Verify again</h2>
    <p>Verifies this delivery again with its sender's code, offline, and publishes its events again (same ids: each is applied once).</p>
    <p>Dry run: {{preview}}</p>
    <form method="post" action="{{base}}/deliveries/{{source}}/{{position}}/reverify">
    <input type="hidden" name="csrf" value="{{csrf}}">
    <button type="submit">Verify again and publish</button>
    </form>
    </section>
    {{/preview}}
    {{#body}}
    <h2>Headers</h2>
    <table><tbody>{{#headers}}<tr><th scope="row">{{name}}</th><td class="id">{{value}}</td></tr>{{/headers}}</tbody></table>
    <h2>Body</h2>
    <pre>{{body}}</pre>
    {{/body}}
    {{> foot}}
    """

    static let confirm = """
    {{> head}}
    <h1>{{heading}}</h1>
    <section class="card">
    <p>{{description}}</p>
    {{#preview}}<p>Dry run: {{preview}}</p>{{/preview}}
    <form method="post" action="{{action}}">
    <input type="hidden" name="csrf" value="{{csrf}}">
    <button type="submit">{{button}}</button>
    <a href="{{back}}">Cancel</a>
    </form>
    </section>
    {{> foot}}
    """

    static let result = """
    {{> head}}
    <h1>{{heading}}</h1>
    <p class="outcome-{{outcome}}" role="status">{{detail}}</p>
    <p>Recorded in the audit as #{{sequence}} ({{outcome}}).</p>
    <p><a href="{{back}}">Back</a></p>
    {{> foot}}
    """

    static let endpoints = """
    {{> head}}
    <h1>Outbound endpoints</h1>
    {{^hasEndpoints}}<p>No endpoint is configured (webhooks.endpoints).</p>{{/hasEndpoints}}
    {{#hasEndpoints}}
    <table>
    <thead><tr><th scope="col">Endpoint</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Waiting</th><th scope="col">Parked</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
    <tbody>
    {{#endpoints}}
    <tr><th scope="row">{{name}} <span class="id">{{origin}}</span></th><td>{{kind}}</td><td>{{state}}</td><td>{{pending}}</td><td>{{parked}}</td>
    <td>{{#canAct}}{{#enabled}}<a class="button" href="{{base}}/endpoints/{{name}}/disable">Disable…</a>{{/enabled}}{{^enabled}}<a class="button" href="{{base}}/endpoints/{{name}}/enable">Enable…</a>{{/enabled}}
    {{#hasParked}}<a class="button" href="{{base}}/endpoints/{{name}}/replay?parked=1">Send parked again…</a>{{/hasParked}}
    <a class="button" href="{{base}}/endpoints/{{name}}/replay?hours=1">Send the last hour again…</a>
    <a class="button" href="{{base}}/endpoints/{{name}}/replay?hours=24">Send the last day again…</a>{{/canAct}}</td></tr>
    {{/endpoints}}
    </tbody>
    </table>
    {{/hasEndpoints}}
    {{> foot}}
    """

    static let audit = """
    {{> head}}
    <h1>Audit</h1>
    <p>Every action taken in the console, newest first; the same records are on the audit topic.</p>
    {{^entries}}<p>None yet.</p>{{/entries}}
    {{#hasEntries}}
    <table>
    <thead><tr><th scope="col">#</th><th scope="col">When</th><th scope="col">Operator</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Outcome</th><th scope="col">Detail</th></tr></thead>
    <tbody>
    {{#entries}}<tr><td>{{sequence}}</td><td>{{at}}</td><td>{{operatorName}}</td><td>{{action}}</td><td class="id">{{target}}</td><td>{{outcome}}</td><td>{{detail}}</td></tr>{{/entries}}
    </tbody>
    </table>
    {{/hasEntries}}
    {{> foot}}
    """

    static let stylesheet = """
    :root { --ink: #1d2330; --muted: #5b6475; --line: #d9dde5; --accent: #2457c5; --ok: #1c7c3c; --warn: #a15c00; --bad: #b3261e; }
    * { box-sizing: border-box; }
    body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #f6f7f9; }
    header { display: flex; flex-wrap: wrap; gap: .75rem; align-items: center; padding: .75rem 1rem; background: #fff; border-bottom: 1px solid var(--line); }
    .brand { font-weight: 700; color: var(--ink); text-decoration: none; }
    nav { display: flex; gap: .75rem; margin-right: auto; flex-wrap: wrap; }
    a.button { display: inline-block; padding: .4rem .6rem; border: 1px solid var(--accent); border-radius: .3rem; text-decoration: none; margin: 0 .5rem .5rem 0; }
    .outcome-done { color: var(--ok); } .outcome-refused, .outcome-failed { color: var(--bad); }
    main { max-width: 72rem; margin: 0 auto; padding: 1rem; }
    form.search { display: flex; gap: .5rem; align-items: center; flex: 1 1 20rem; }
    form.search input { flex: 1; min-width: 0; }
    form.signout { display: flex; gap: .5rem; align-items: center; }
    input, button { font: inherit; padding: .4rem .6rem; border: 1px solid var(--line); border-radius: .3rem; }
    button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
    a { color: var(--accent); }
    a:focus, button:focus, input:focus, summary:focus { outline: 3px solid #f2b705; outline-offset: 2px; }
    .card { background: #fff; border: 1px solid var(--line); border-radius: .5rem; padding: 1rem; }
    form.card { display: grid; gap: .5rem; max-width: 28rem; }
    .totals { display: grid; grid-template-columns: repeat(auto-fit, minmax(12rem, 1fr)); gap: 1rem; }
    .number { font-size: 1.75rem; font-weight: 700; display: block; }
    table { width: 100%; border-collapse: collapse; background: #fff; margin: .5rem 0 1rem; }
    th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
    td { overflow-wrap: anywhere; }
    .id { font-family: ui-monospace, monospace; font-size: .9em; overflow-wrap: anywhere; }
    .facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: .5rem 0; }
    .facts dt { color: var(--muted); }
    .facts dd { margin: 0; overflow-wrap: anywhere; }
    .story { list-style: none; padding: 0; }
    .step { background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--ok); border-radius: .4rem; padding: .75rem 1rem; margin-bottom: .75rem; }
    .step.unchanged { border-left-color: var(--warn); }
    .outcome { font-size: .8em; color: var(--muted); font-weight: 400; }
    pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f0f2f5; padding: .5rem; border-radius: .3rem; }
    .refusal { color: var(--bad); }
    .granted { color: var(--ok); } .denied { color: var(--bad); }
    svg.bar rect.applied { fill: var(--ok); } svg.bar rect.unchanged { fill: var(--warn); } svg.bar rect.refused { fill: var(--bad); }
    .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
    @media (max-width: 40rem) { header { flex-direction: column; align-items: stretch; } form.search { flex: none; } .facts { grid-template-columns: 1fr; } }
    """
}
