#!/usr/bin/env python3
"""The operator console in a real browser (docs/console.md), run by `make test` (scripts/run-tests.sh).

Starts the built `tollgate dev` with examples/dev.yaml on a free port in a temporary directory, posts
deliveries through the webhook route (one with HTML and script in every field it can carry), and drives
Debian's Chromium through chromedriver with Selenium: sign in, find the user of a delivery just posted,
open the purchase and read its story, the delivery behind it (its body without the sender's credential)
verified again after its dry run, the hostile delivery's pages rendered as text (no script element,
no image, no alert), a dead letter (a record the workers cannot read, produced with kcat) replayed after
its dry run and gone from the waiting list, an action's audit on the page and on tollgate.audit, a forged
CSRF token refused, a read-only operator shown no action and refused one (403), keyboard-only navigation,
and a phone-sized page. Screenshots of each page land in .build/console/ (docs/console.md shows them).
"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, ".build", "debug", "tollgate")
SHOTS = os.path.join(ROOT, ".build", "console")
OPERATOR = "demo-operator-token-change-me-please"
VIEWER = "demo-viewer-token-change-me-please-0"
HOSTILE = "<script>alert(1)</script>\"'&<img src=x onerror=alert(2)>"

failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)


def wait_for(predicate, what, timeout=30.0):
    """Polls `predicate` until it holds; a page still loading (an element not there yet) is not yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except (NoSuchElementException, StaleElementReferenceException):
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise TimeoutError(what)


def start_dev(workdir):
    log = open(os.path.join(workdir, "dev.log"), "w+")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOLLGATE_")}
    env["TOLLGATE_HTTP_PORT"] = "0"
    process = subprocess.Popen([BINARY, "dev", "--config", os.path.join(ROOT, "examples", "dev.yaml")], cwd=workdir,
                               stdout=log, stderr=subprocess.STDOUT, env=env)

    def port():
        if process.poll() is not None:
            raise RuntimeError("tollgate dev exited:\n" + open(log.name).read())
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(log.name).read())
        return found and int(found.group(1))

    base = "http://127.0.0.1:%d" % wait_for(port, "tollgate dev's port", 90)

    def ready():
        try:
            return urllib.request.urlopen(base + "/readyz", timeout=2).status == 200
        except (urllib.error.URLError, OSError):
            return False

    wait_for(ready, "tollgate dev ready", 90)
    return process, base


def post_delivery(base, body):
    request = urllib.request.Request(base + "/webhooks/iaptic", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    return urllib.request.urlopen(request, timeout=10).status


def hostile_delivery(sample):
    body = copy.deepcopy(sample)
    body["applicationUsername"] = HOSTILE
    body["notification"]["id"] = "ntf_" + HOSTILE
    purchase = body["purchases"]["apple:pro_monthly"]
    purchase["purchaseId"] = body["notification"]["purchaseId"] = "apple:9" + HOSTILE
    purchase["transactionId"] = "apple:8" + HOSTILE
    purchase["currency"] = "USD"
    return body


def user_43_delivery(sample, reason, notification):
    body = copy.deepcopy(sample)
    body["applicationUsername"] = "user-43"
    body["notification"].update({"id": notification, "reason": reason, "purchaseId": "apple:3000000000000043"})
    purchase = body["purchases"]["apple:pro_monthly"]
    purchase.update({"purchaseId": "apple:3000000000000043", "transactionId": "apple:3000000000000044"})
    if reason == "REFUNDED":
        body["notification"]["date"] = "2026-11-21T10:15:00.000Z"
        purchase["cancelationReason"] = "Customer"
    return body


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)


def shot(driver, name):
    # The whole page, not only the window: as tall as its content.
    height = driver.execute_script("return document.documentElement.scrollHeight")
    width = driver.get_window_size()["width"]
    driver.set_window_size(width, min(max(height + 120, 600), 4000))
    driver.save_screenshot(os.path.join(SHOTS, name + ".png"))


def no_alert(driver):
    try:
        driver.switch_to.alert
        return False
    except NoAlertPresentException:
        return True


def sign_in(driver, base, credential):
    driver.get(base + "/console")
    wait_for(lambda: "/console/sign-in" in driver.current_url, "the sign-in page")
    field = driver.find_element(By.ID, "credential")
    field.send_keys(credential)
    field.send_keys(Keys.ENTER)
    wait_for(lambda: driver.current_url.rstrip("/").endswith("/console"), "the overview after sign-in")


def session_cookie(driver):
    return next((c for c in driver.get_cookies() if c["name"] == "tollgate_console"), None)


def kcat(workdir, *arguments, data=None):
    bootstrap = open(os.path.join(workdir, ".tollgate", "bootstrap")).read().strip()
    return subprocess.run(["kcat", "-b", bootstrap, *arguments], input=data, capture_output=True, timeout=60, check=True).stdout


def post_form(base, path, fields, cookie, reason=None):
    """The answer's status; with `reason`, whether the refusal page names that reason code too."""
    request = urllib.request.Request(base + path, data=urllib.parse.urlencode(fields).encode(), method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded",
                                              "Cookie": "tollgate_console=" + cookie})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        body = error.read().decode(errors="replace")
        return error.code if reason is None or ("<code>%s</code>" % reason) in body else "%d without %s" % (error.code, reason)


def main():
    os.makedirs(SHOTS, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="tollgate-console-")
    process, base = start_dev(workdir)
    driver = None
    try:
        sample = json.load(open(os.path.join(ROOT, "examples", "iaptic-renewed.json")))
        check(post_delivery(base, sample) == 200, "the sample delivery is accepted through the webhook route")
        check(post_delivery(base, hostile_delivery(sample)) == 200, "the hostile delivery is accepted (its fields are data)")
        # user-43 paid, then was refunded: the user the operator is asked about ("she paid and has no access").
        for reason, notification in (("RENEWED", "ntf_43_renewed"), ("REFUNDED", "ntf_43_refunded")):
            check(post_delivery(base, user_43_delivery(sample, reason, notification)) == 200, "user-43's %s delivery is accepted" % reason)

        driver = browser()
        driver.get(base + "/console")
        wait_for(lambda: "/console/sign-in" in driver.current_url, "the sign-in page")
        shot(driver, "sign-in")
        driver.find_element(By.ID, "credential").send_keys("not-an-operator-credential")
        driver.find_element(By.CSS_SELECTOR, "form.card button").click()
        check(wait_for(lambda: "not an operator credential" in driver.find_element(By.TAG_NAME, "main").text, "the sign-in's refusal"),
              "a wrong credential is refused on the page")

        sign_in(driver, base, OPERATOR)
        cookie = session_cookie(driver)
        check(cookie is not None and cookie.get("httpOnly") and cookie.get("secure") and cookie.get("sameSite") == "Strict",
              "the session cookie is HttpOnly, Secure and SameSite=Strict")

        # The user of the delivery just posted, found from the overview, once the workers applied it.
        wait_for(lambda: (driver.refresh() or True) and driver.find_elements(
                     By.XPATH, "//h2[normalize-space()='Events applied, last hour']/following-sibling::table[1]//th[normalize-space()='iaptic']"),
                 "the overview counts the applied events", 60)
        # The gateway's numbers: a delivery refused now is counted for its sender, by reason, linked.
        wrong = copy.deepcopy(sample)
        wrong["password"] = "not-the-secret"
        try:
            post_delivery(base, wrong)
            refused = 200
        except urllib.error.HTTPError as error:
            refused = error.code
        check(refused == 401, "a delivery with a wrong password is refused (401)")

        def gateway_row():
            driver.refresh()
            rows = driver.find_elements(By.XPATH, "//h2[normalize-space()='Deliveries at the gateway']/following-sibling::table[1]//tr[th[normalize-space()='iaptic']]")
            cells = [cell.text for cell in rows[0].find_elements(By.TAG_NAME, "td")] if rows else []
            return cells if len(cells) >= 4 and int(cells[3] or 0) >= 1 and int(cells[1] or 0) >= 1 else None

        cells = wait_for(gateway_row, "the overview's gateway numbers count the refused delivery", 30)
        check(cells is not None and "silent for" in cells[-1], "the overview shows iaptic's deliveries accepted and refused today, and its silence")
        driver.set_window_size(1280, 1400)
        shot(driver, "overview")
        driver.find_element(By.XPATH, "//tr[th[normalize-space()='iaptic']]/td[4]/a").click()
        check(wait_for(lambda: "/console/senders/iaptic" in driver.current_url and "wrong_password" in driver.find_element(By.TAG_NAME, "main").text,
                       "the sender's page"), "the refused number leads to its reason code")
        driver.set_window_size(1280, 900)
        shot(driver, "sender")
        # The counts open their lists.
        driver.get(base + "/console")
        wait_for(lambda: driver.find_element(By.PARTIAL_LINK_TEXT, "active entitlements"), "the overview's counts").click()
        check(wait_for(lambda: "/console/entitlements" in driver.current_url
                       and ("user-42" in driver.find_element(By.TAG_NAME, "main").text or driver.refresh()),
                       "the active entitlements", 60), "the active entitlements count opens the list, user-42 in it")
        driver.get(base + "/console")
        wait_for(lambda: driver.find_element(By.XPATH, "//section[@class='totals']//a[contains(., 'purchases')]"), "the overview's counts").click()
        check(wait_for(lambda: driver.current_url.endswith("/console/purchases")
                       and "subscription.renewed" in driver.find_element(By.TAG_NAME, "main").text, "the purchases of the latest events"),
              "the purchases count opens the purchases of the latest events")
        driver.set_window_size(1280, 900)
        shot(driver, "purchases")
        driver.get(base + "/console")
        search = driver.find_element(By.ID, "q")
        search.send_keys(sample["applicationUsername"])
        search.send_keys(Keys.ENTER)
        wait_for(lambda: "/console/user" in driver.current_url, "the user's page")
        text = driver.find_element(By.TAG_NAME, "main").text
        check("user-42" in text and "granted" in text and "apple:pro_monthly" in text, "the user's page shows the entitlement granted")
        driver.set_window_size(1280, 900)
        shot(driver, "user")

        driver.find_element(By.CSS_SELECTOR, "td a[href*='/console/purchases/']").click()
        wait_for(lambda: "/console/purchases/" in driver.current_url, "the purchase's page")
        story = driver.find_element(By.CSS_SELECTOR, "ol.story").text
        check("subscription.renewed" in story and "applied" in story and "tollgate.events partition" in story,
              "the purchase's story shows the event, its outcome and its record")
        check("apple:2000000987654321" in story, "the story names the transaction")
        driver.find_element(By.TAG_NAME, "summary").click()
        check('"password"' not in driver.page_source and "demo-secret" not in driver.page_source,
              "the sender's credential in the body is absent from the page")
        purchase_url = driver.current_url
        wait_for(lambda: (driver.refresh() or True) and "Delivered by the sender" in driver.find_element(By.CSS_SELECTOR, "ol.story").text,
                 "the delivery that carried the event, in the story", 60)
        driver.find_element(By.TAG_NAME, "summary").click()
        driver.set_window_size(1280, 900)
        shot(driver, "purchase")
        # The delivery itself: as it arrived, its credential absent; verified again after its dry run.
        driver.find_element(By.CSS_SELECTOR, "ol.story a[href*='/console/deliveries/iaptic/']").click()
        wait_for(lambda: "/console/deliveries/" in driver.current_url, "the delivery's page")
        main = driver.find_element(By.TAG_NAME, "main").text
        check("ntf_7d4f1c2a" in main and "verified by the gateway (demo)" in main and "demo-secret" not in driver.page_source,
              "the delivery's page shows its body as it arrived, without the sender's credential")
        check("1 event(s) would be published again" in main, "the delivery's page shows the re-verification's dry run")
        driver.set_window_size(1280, 900)
        shot(driver, "delivery")
        driver.find_element(By.XPATH, "//button[normalize-space()='Verify again and publish']").click()
        wait_for(lambda: "Recorded in the audit" in driver.find_element(By.TAG_NAME, "main").text, "the re-verification's result")
        check("verified; 1 event(s) published again" in driver.find_element(By.TAG_NAME, "main").text,
              "the delivery is verified again and its event published again")
        driver.get(purchase_url)
        # Back to the user, by the link on the purchase's page.
        driver.find_element(By.CSS_SELECTOR, "dl.facts a[href*='/console/user']").click()
        wait_for(lambda: "/console/user" in driver.current_url, "the user's page from the purchase")

        # Why user-43 has no access, from the overview: search (1), the purchase (2), its story says.
        driver.get(base + "/console")
        search = driver.find_element(By.ID, "q")
        search.send_keys("user-43" + Keys.ENTER)
        wait_for(lambda: "/console/user" in driver.current_url, "user-43's page")
        wait_for(lambda: (driver.refresh() or True) and "refunded" in driver.find_element(By.TAG_NAME, "main").text,
                 "user-43's refund applied", 60)
        check(" none" in driver.find_element(By.TAG_NAME, "table").text.lower() or "None:" in driver.find_element(By.TAG_NAME, "main").text,
              "user-43's page shows no access")
        driver.set_window_size(1280, 900)
        shot(driver, "user-without-access")
        driver.find_element(By.CSS_SELECTOR, "td a[href*='/console/purchases/']").click()
        wait_for(lambda: "/console/purchases/" in driver.current_url, "user-43's purchase")
        story = driver.find_element(By.CSS_SELECTOR, "ol.story").text
        check(story.index("subscription.renewed") < story.index("purchase.refunded"),
              "two clicks from the overview, the story shows the renewal and then the refund that ended access")
        driver.set_window_size(1280, 900)
        shot(driver, "purchase-refunded")

        # The hostile delivery: every page renders its fields as text.
        driver.get(base + "/console/search?q=" + urllib.parse.quote(HOSTILE))
        wait_for(lambda: "/console/user" in driver.current_url, "the hostile user's page")
        heading = driver.find_element(By.TAG_NAME, "h1").text
        check(HOSTILE in heading, "the hostile user id is shown as text")
        check(driver.find_elements(By.TAG_NAME, "script") == [] and driver.find_elements(By.TAG_NAME, "img") == [],
              "no script or image element comes from the payload (user page)")
        check(no_alert(driver), "no script ran (user page)")
        driver.find_element(By.CSS_SELECTOR, "td a[href*='/console/purchases/']").click()
        wait_for(lambda: "/console/purchases/" in driver.current_url, "the hostile purchase's page")
        driver.find_element(By.TAG_NAME, "summary").click()
        story = driver.find_element(By.CSS_SELECTOR, "ol.story").text
        check("apple:8" + HOSTILE in story, "the hostile transaction id is shown as text")
        check(json.dumps(HOSTILE)[1:-1] in driver.find_element(By.TAG_NAME, "pre").text, "the hostile event is shown as JSON text")
        check(driver.find_elements(By.TAG_NAME, "script") == [] and driver.find_elements(By.TAG_NAME, "img") == [],
              "no script or image element comes from the payload (purchase page)")
        check(no_alert(driver), "no script ran (purchase page)")
        driver.set_window_size(1280, 900)
        shot(driver, "hostile-purchase")

        # A dead letter: a record on tollgate.events that is not an event goes to the dead-letter topic.
        kcat(workdir, "-P", "-t", "tollgate.events", "-k", "poison", "-H", "ce_id=poison-event-1", "-H", "ce_type=dev.tollgate.purchase.completed",
             data=b"{not an event")
        driver.get(base + "/console")

        def waiting_count():
            driver.refresh()
            found = re.search(r"(\d+)\s+dead letters waiting", driver.find_element(By.TAG_NAME, "main").text)
            return found and int(found.group(1)) >= 1

        wait_for(waiting_count, "the dead letter counted on the overview", 60)
        driver.find_element(By.PARTIAL_LINK_TEXT, "dead letters waiting").click()
        wait_for(lambda: "/console/dead-letters" in driver.current_url, "the dead letters' page")
        link = driver.find_element(By.CSS_SELECTOR, "table a[href*='/console/dead-letters/']")
        position = link.text
        driver.set_window_size(1280, 900)
        shot(driver, "dead-letters")
        link.click()
        wait_for(lambda: "Dry run:" in driver.find_element(By.TAG_NAME, "main").text, "the replay's dry run")
        check("would be published again to tollgate.events" in driver.find_element(By.TAG_NAME, "main").text,
              "the dead letter's page shows the replay's dry run first")
        driver.set_window_size(1280, 900)
        shot(driver, "dead-letter")
        driver.find_element(By.XPATH, "//button[normalize-space()='Replay now']").click()
        wait_for(lambda: "Recorded in the audit" in driver.find_element(By.TAG_NAME, "main").text, "the replay's result")
        check("replayed " + position in driver.find_element(By.TAG_NAME, "main").text, "the dead letter is replayed")
        driver.get(base + "/console/dead-letters")
        waiting_links = [a.get_attribute("href") for a in
                         driver.find_elements(By.XPATH, "//h2[starts-with(normalize-space(), 'Waiting')]/following-sibling::*[1][self::table]//a")]
        check(not any(href.endswith("/console/dead-letters/" + position) for href in waiting_links),
              "the replayed dead letter left the waiting list")
        check(driver.find_elements(By.XPATH, "//h2[normalize-space()='Replayed']/following-sibling::table[1]//a[substring(@href, string-length(@href) - %d) = '/%s']"
                                   % (len(position), position)) != [], "it is listed as replayed")
        # Replaying it again is refused (once unless forced), and recorded.
        token = driver.find_element(By.CSS_SELECTOR, "form.signout input[name=csrf]").get_attribute("value")
        session = session_cookie(driver)["value"]
        check(post_form(base, "/console/dead-letters/%s/replay" % position, {"csrf": token}, session) == 200, "a second replay is answered")
        driver.get(base + "/console/audit")
        audit = driver.find_element(By.TAG_NAME, "main").text
        check("demo-operator" in audit and "dead_letter.replay" in audit and "done" in audit and "refused" in audit,
              "the audit page names who replayed what, and the refused second replay")
        check("delivery.reverify" in audit, "the audit page names the delivery verified again")
        driver.set_window_size(1280, 900)
        shot(driver, "audit")
        driver.get(base + "/console/endpoints")
        check("No endpoint is configured" in driver.find_element(By.TAG_NAME, "main").text, "the endpoints' page says none is configured")
        shot(driver, "endpoints")
        records = kcat(workdir, "-C", "-t", "tollgate.audit", "-e", "-q", "-o", "beginning").decode()
        published = [json.loads(line) for line in records.splitlines() if line.strip()]
        check(any(r.get("operator") == "demo-operator" and r.get("action") == "dead_letter.replay" and r.get("outcome") == "done"
                  and r.get("target") == position for r in published), "the replay's audit record is on tollgate.audit")

        # A purchase refreshed from its store: Iaptic's has none, so the action is refused and recorded.
        driver.get(base + "/console/search?q=user-42")
        driver.find_element(By.CSS_SELECTOR, "td a[href*='/console/purchases/']").click()
        driver.find_element(By.PARTIAL_LINK_TEXT, "Refresh from its store").click()
        wait_for(lambda: "Refresh now" in driver.page_source, "the refresh's confirmation")
        driver.set_window_size(1280, 900)
        shot(driver, "confirm")
        driver.find_element(By.XPATH, "//button[normalize-space()='Refresh now']").click()
        wait_for(lambda: "Recorded in the audit" in driver.find_element(By.TAG_NAME, "main").text, "the refresh's result")
        check("refused" in driver.find_element(By.TAG_NAME, "main").text, "refreshing an Iaptic purchase is refused, and recorded")

        # A forged CSRF token is refused; the session's own is taken.
        session = session_cookie(driver)["value"]
        check(post_form(base, "/console/sign-out", {"csrf": "forged"}, session, "csrf_token_invalid") == 403,
              "a forged CSRF token is refused (403 csrf_token_invalid)")
        check(post_form(base, "/console/sign-out", {}, session, "csrf_token_invalid") == 403, "a form without its CSRF token is refused (403)")
        check(post_form(base, "/console/dead-letters/%s/replay" % position, {"csrf": "forged"}, session, "csrf_token_invalid") == 403,
              "an action with a forged CSRF token is refused (403)")

        # Keyboard only: from the overview, Tab to the search, type, Enter; Tab to the purchase, Enter.
        driver.get(base + "/console")
        body = driver.find_element(By.TAG_NAME, "body")
        body.send_keys(Keys.TAB)

        def focus_on(selector, limit=20):
            for _ in range(limit):
                active = driver.switch_to.active_element
                if driver.execute_script("return arguments[0].matches(arguments[1])", active, selector):
                    return active
                active.send_keys(Keys.TAB)
            return None

        field = focus_on("#q")
        check(field is not None, "the search field is reached with Tab")
        if field is not None:
            field.send_keys("user-42" + Keys.ENTER)
            wait_for(lambda: "/console/user" in driver.current_url, "the user's page by keyboard")
            link = focus_on("td a[href*='/console/purchases/']", 40)
            check(link is not None, "the purchase link is reached with Tab")
            if link is not None:
                link.send_keys(Keys.ENTER)
                wait_for(lambda: "/console/purchases/" in driver.current_url, "the purchase's page by keyboard")
                check("subscription.renewed" in driver.find_element(By.CSS_SELECTOR, "ol.story").text,
                      "the purchase's story is reached by keyboard alone")

        # Keyboard only, through the other pages: the header's links to the dead letters, then the audit.
        driver.get(base + "/console")
        for page in ("dead-letters", "audit"):
            driver.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
            link = focus_on("nav a[href$='/console/%s']" % page)
            check(link is not None, "the header's link to %s is reached with Tab" % page)
            if link is None:
                break
            link.send_keys(Keys.ENTER)
            wait_for(lambda: driver.current_url.endswith("/console/" + page), "the %s page by keyboard" % page)
        check(driver.current_url.endswith("/console/audit") and "dead_letter.replay" in driver.find_element(By.TAG_NAME, "main").text,
              "the audit is read by keyboard alone")

        # A phone: the purchase page at 390 px wide, nothing wider than the screen.
        driver.get(base + "/console/search?q=user-42")
        driver.find_element(By.CSS_SELECTOR, "td a[href*='/console/purchases/']").click()
        wait_for(lambda: "/console/purchases/" in driver.current_url, "the purchase's page")
        driver.set_window_size(390, 844)
        overflow = driver.execute_script("return document.documentElement.scrollWidth > window.innerWidth + 1")
        header = driver.execute_script("return document.querySelector('header').getBoundingClientRect().height")
        check(header < 844 / 3, "on a phone the header takes less than a third of the screen")
        check(not overflow, "the purchase page fits a phone's width")
        shot(driver, "purchase-phone")

        # Sign out with the session's own token: the page is gone until the next sign-in.
        driver.set_window_size(1280, 900)
        driver.find_element(By.CSS_SELECTOR, "form.signout button").click()
        wait_for(lambda: "/console/sign-in" in driver.current_url, "the sign-in page after sign-out")
        driver.get(base + "/console")
        check("/console/sign-in" in driver.current_url, "signed out: the overview asks for a sign-in")

        # A read-only operator is named so, sees no action, and is refused one (403) with a valid CSRF token.
        sign_in(driver, base, VIEWER)
        check("(read-only)" in driver.find_element(By.TAG_NAME, "header").text, "a read-only operator is shown as read-only")
        driver.get(base + "/console/dead-letters")
        driver.find_element(By.CSS_SELECTOR, "table a[href*='/console/dead-letters/']").click()
        check(driver.find_elements(By.XPATH, "//button[normalize-space()='Replay now']") == [] and "Dry run" not in driver.page_source,
              "a read-only operator is shown no replay")
        driver.get(base + "/console/search?q=user-42")
        driver.find_element(By.CSS_SELECTOR, "td a[href*='/console/purchases/']").click()
        check(driver.find_elements(By.PARTIAL_LINK_TEXT, "Refresh from its store") == [], "a read-only operator is shown no refresh")
        purchase_path = urllib.parse.urlparse(driver.current_url).path
        token = driver.find_element(By.CSS_SELECTOR, "form.signout input[name=csrf]").get_attribute("value")
        driver.get(base + purchase_path + "/refresh")
        check("action_not_allowed" in driver.find_element(By.TAG_NAME, "main").text, "a read-only operator's preview is a refusal page")
        driver.set_window_size(1280, 900)
        shot(driver, "refusal")
        viewer = session_cookie(driver)["value"]
        check(post_form(base, purchase_path + "/refresh", {"csrf": token}, viewer, "action_not_allowed") == 403,
              "a read-only operator's action is refused (403 action_not_allowed)")
        check(post_form(base, "/console/dead-letters/%s/replay" % position, {"csrf": token}, viewer, "action_not_allowed") == 403,
              "a read-only operator's replay is refused (403 action_not_allowed)")
    except Exception as error:  # a wait that timed out, a missing element: say which, with the server's log
        failures.append("%s: %s" % (type(error).__name__, error))
        print("FAIL " + failures[-1], flush=True)
    finally:
        if driver is not None:
            driver.quit()
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
        if failures:
            print(open(os.path.join(workdir, "dev.log")).read()[-4000:])
        shutil.rmtree(workdir, ignore_errors=True)
    print("%d failed" % len(failures) if failures else "console browser test: all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
