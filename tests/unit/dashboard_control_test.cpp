// The dashboard's login tokens (services/scheduler/dashboard/tokens.hpp) and the checks of its
// control POSTs (dashboard/sessions.hpp): valid, expired, tampered and wrong-role tokens, the
// secret's file, sessions, cookies, CSRF and origin checks.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "services/scheduler/dashboard/sessions.hpp"
#include "services/scheduler/dashboard/tokens.hpp"

namespace tunebus::dashboard {
namespace {

constexpr int64_t kNow = 1'800'000'000;

TokenClaims Claims(bus::Role role, int64_t ttl_s = 3600) {
  return {"alice", role, kNow, kNow + ttl_s};
}

// Replaces one character of `text` at `at` by another base64url character.
std::string Flip(std::string text, size_t at) {
  text[at] = text[at] == 'A' ? 'B' : 'A';
  return text;
}

TEST(DashboardTokenTest, AValidTokenNamesItsHolderRoleAndExpiry) {
  LoginTokens tokens = LoginTokens::InMemory();
  const std::string token = tokens.Issue(Claims(bus::Role::kOperator));
  EXPECT_TRUE(token.starts_with("tbt1.")) << token;
  auto claims = tokens.Verify(token, kNow + 10);
  ASSERT_TRUE(claims.ok()) << claims.status().ToString();
  EXPECT_EQ(claims->name, "alice");
  EXPECT_EQ(claims->role, bus::Role::kOperator);
  EXPECT_EQ(claims->issued_at, kNow);
  EXPECT_EQ(claims->expires_at, kNow + 3600);
  // Two tokens of the same claims differ (a random jti), and both verify.
  const std::string other = tokens.Issue(Claims(bus::Role::kOperator));
  EXPECT_NE(token, other);
  EXPECT_TRUE(tokens.Verify(other, kNow).ok());
}

TEST(DashboardTokenTest, AnExpiredTokenIsRefused) {
  LoginTokens tokens = LoginTokens::InMemory();
  const std::string token = tokens.Issue(Claims(bus::Role::kOperator, 60));
  EXPECT_TRUE(tokens.Verify(token, kNow + 59).ok());
  auto expired = tokens.Verify(token, kNow + 60);
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.status().code(), StatusCode::kForbidden);
  EXPECT_NE(expired.status().message().find("expired at 2027-01-15 08:01:00 UTC"),
            std::string::npos)
      << expired.status().message();
}

TEST(DashboardTokenTest, ATamperedTokenDoesNotVerify) {
  LoginTokens tokens = LoginTokens::InMemory();
  const std::string token = tokens.Issue(Claims(bus::Role::kViewer));
  const size_t claims_at = token.find('.') + 1, tag_at = token.rfind('.') + 1;
  // Any changed character of the claims or the tag.
  for (size_t at : {claims_at, claims_at + 10, tag_at, token.size() - 2}) {
    auto v = tokens.Verify(Flip(token, at), kNow);
    ASSERT_FALSE(v.ok()) << at;
    EXPECT_TRUE(v.status().code() == StatusCode::kForbidden ||
                v.status().code() == StatusCode::kInvalidArgument)
        << v.status().ToString();
  }
  // Claims rewritten to operator, with the viewer token's tag: the tag does not verify.
  const std::string forged_claims = Base64Url(
      R"({"exp":1800003600,"iat":1800000000,"jti":"00","name":"alice","role":"operator","v":1})");
  const std::string forged = "tbt1." + forged_claims + token.substr(tag_at - 1);
  auto f = tokens.Verify(forged, kNow);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kForbidden);
  EXPECT_NE(f.status().message().find("does not verify"), std::string::npos);
  // Another scheduler's secret.
  LoginTokens other = LoginTokens::InMemory();
  EXPECT_EQ(other.Verify(token, kNow).status().code(), StatusCode::kForbidden);
  // Not a token at all.
  for (const char* junk : {"", "tbt1.", "tbt1.abc", "abc.def.ghi", "tbt1.!!!.???"}) {
    EXPECT_EQ(tokens.Verify(junk, kNow).status().code(), StatusCode::kInvalidArgument) << junk;
  }
}

TEST(DashboardTokenTest, ClaimsOutsideTheRulesAreRefused) {
  EXPECT_TRUE(LoginTokens::CheckClaims(Claims(bus::Role::kOperator)).ok());
  EXPECT_TRUE(LoginTokens::CheckClaims(Claims(bus::Role::kViewer)).ok());
  for (bus::Role wrong : {bus::Role::kWorker, bus::Role::kService, bus::Role::kSearcher}) {
    EXPECT_EQ(LoginTokens::CheckClaims(Claims(wrong)).code(), StatusCode::kInvalidArgument);
  }
  EXPECT_FALSE(LoginTokens::CheckClaims(Claims(bus::Role::kOperator, 0)).ok());
  EXPECT_FALSE(LoginTokens::CheckClaims(Claims(bus::Role::kOperator, 31 * 86400)).ok());
  TokenClaims nameless = Claims(bus::Role::kOperator);
  nameless.name = "";
  EXPECT_FALSE(LoginTokens::CheckClaims(nameless).ok());
  nameless.name = "a\nb";
  EXPECT_FALSE(LoginTokens::CheckClaims(nameless).ok());
}

TEST(DashboardTokenTest, TtlTakesSecondsMinutesHoursDays) {
  EXPECT_EQ(*ParseTokenTtl("90"), 90);
  EXPECT_EQ(*ParseTokenTtl("90s"), 90);
  EXPECT_EQ(*ParseTokenTtl("30m"), 1800);
  EXPECT_EQ(*ParseTokenTtl("12h"), 43200);
  EXPECT_EQ(*ParseTokenTtl("1.5h"), 5400);
  EXPECT_EQ(*ParseTokenTtl("30d"), 30 * 86400);
  for (const char* bad : {"", "h", "0", "-1h", "31d", "12x", "1e400", "nan"}) {
    EXPECT_FALSE(ParseTokenTtl(bad).ok()) << bad;
  }
  EXPECT_NE(ParseTokenTtl("40d").status().message().find("'40d'"), std::string::npos);
}

// The secret's file is made once (0600) and read again: its tokens outlive a restart.
TEST(DashboardTokenTest, TheSecretFileKeepsTokensValidAcrossLoads) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "tbt-secret";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "dashboard_token.secret").string();
  auto first = LoginTokens::Load(path);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string token = first->Issue(Claims(bus::Role::kOperator));
  auto again = LoginTokens::Load(path);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->Verify(token, kNow).ok());
  // A new secret (the file deleted) ends the old tokens.
  std::filesystem::remove(path);
  auto fresh = LoginTokens::Load(path);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->Verify(token, kNow).status().code(), StatusCode::kForbidden);
  // A damaged file is an error, not a new secret; so is one that others may read.
  std::ofstream(path) << "not hex\n";
  EXPECT_EQ(LoginTokens::Load(path).status().code(), StatusCode::kInvalidArgument);
  std::filesystem::permissions(path, std::filesystem::perms::group_read,
                               std::filesystem::perm_options::add);
  EXPECT_EQ(LoginTokens::Load(path).status().code(), StatusCode::kFailedPrecondition);
  std::filesystem::remove_all(dir);
}

TEST(DashboardSessionTest, SessionsEndWithTheirTokenOrSignOut) {
  SessionTable table;
  const Session s = table.Create("tbt1.x.y", Claims(bus::Role::kOperator, 100));
  EXPECT_EQ(s.id.size(), 43u);  // 32 bytes, base64url
  EXPECT_EQ(s.csrf.size(), 43u);
  EXPECT_NE(s.id, s.csrf);
  ASSERT_TRUE(table.Find(s.id, kNow + 99).has_value());
  EXPECT_EQ(table.Find(s.id, kNow + 99)->token, "tbt1.x.y");
  EXPECT_FALSE(table.Find("", kNow).has_value());
  EXPECT_FALSE(table.Find(s.id + "x", kNow).has_value());
  EXPECT_FALSE(table.Find(s.id, kNow + 100).has_value());  // expired: dropped
  EXPECT_EQ(table.size(), 0u);
  const Session t = table.Create("tbt1.x.y", Claims(bus::Role::kOperator, 100));
  table.Erase(t.id);
  EXPECT_FALSE(table.Find(t.id, kNow).has_value());
}

TEST(DashboardSessionTest, CookiesAreHttpOnlyAndSameSiteStrict) {
  EXPECT_EQ(CookieValue("a=1; tunebus_session=xyz; b=2", kSessionCookie), "xyz");
  EXPECT_EQ(CookieValue("tunebus_session=xyz", kSessionCookie), "xyz");
  EXPECT_EQ(CookieValue("xtunebus_session=no; a=1", kSessionCookie), "");
  EXPECT_EQ(CookieValue("", kSessionCookie), "");
  EXPECT_EQ(SessionCookie("abc", 60),
            "tunebus_session=abc; Path=/; HttpOnly; SameSite=Strict; Max-Age=60");
  EXPECT_EQ(SessionCookie("", 60),
            "tunebus_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
}

TEST(DashboardSessionTest, AControlPostNeedsSameOriginSessionCsrfAndOperator) {
  SessionTable table;
  const Session op = table.Create("t", Claims(bus::Role::kOperator));
  const Session viewer = table.Create("t", Claims(bus::Role::kViewer));
  PostHeaders good{"127.0.0.1:8265", "http://127.0.0.1:8265", "same-origin", op.csrf};
  EXPECT_TRUE(CheckControlPost(op, good).ok());
  // Without Origin and Sec-Fetch-Site (not a browser): the session and CSRF token decide.
  PostHeaders bare{"127.0.0.1:8265", "", "", op.csrf};
  EXPECT_TRUE(CheckControlPost(op, bare).ok());

  auto refused = [](const std::optional<Session>& s, const PostHeaders& h, const char* why) {
    const Status st = CheckControlPost(s, h);
    EXPECT_EQ(st.code(), StatusCode::kForbidden) << why;
    EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
  };
  refused(std::nullopt, good, "not signed in");
  PostHeaders no_csrf = good;
  no_csrf.csrf = "";
  refused(op, no_csrf, "CSRF");
  PostHeaders wrong_csrf = good;
  wrong_csrf.csrf = viewer.csrf;  // another session's
  refused(op, wrong_csrf, "CSRF");
  wrong_csrf.csrf = op.csrf.substr(1);
  refused(op, wrong_csrf, "CSRF");
  PostHeaders cross = good;
  cross.origin = "http://evil.example";
  refused(op, cross, "cross-origin");
  PostHeaders cross_site = good;
  cross_site.sec_fetch_site = "cross-site";
  refused(op, cross_site, "cross-origin");
  PostHeaders viewer_headers = good;
  viewer_headers.csrf = viewer.csrf;
  refused(viewer, viewer_headers, "signed in as a viewer");
}

TEST(DashboardSessionTest, TheActionLogListsAnExperimentsActionsNewestFirst) {
  ActionLog log;
  log.Add({{"experiment", "a-1"}, {"action", "stop_trial"}, {"time", 1}});
  log.Add({{"experiment", "b-2"}, {"action", "set_weight"}, {"time", 2}});
  log.Add({{"experiment", "a-1"}, {"action", "pause_trial"}, {"time", 3}});
  const auto a = log.For("a-1", 10);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0]["action"], "pause_trial");
  EXPECT_EQ(a[1]["action"], "stop_trial");
  EXPECT_EQ(log.For("a-1", 1).size(), 1u);
  EXPECT_EQ(log.For("c", 10).size(), 0u);
  for (int i = 0; i < int(ActionLog::kMaxEntries) + 10; ++i) log.Add({{"experiment", "c"}});
  EXPECT_EQ(log.For("c", 10000).size(), ActionLog::kMaxEntries);
}

}  // namespace
}  // namespace tunebus::dashboard
