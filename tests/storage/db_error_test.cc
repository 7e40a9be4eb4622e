// Errors are classified once, in storage: each MySQL/MariaDB error number gets its kind and its
// status code here, and nothing above storage looks at the number.
#include "server/storage/db_error.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace giftwall::storage {
namespace {

struct Case {
  int code;
  DbErrorKind kind;
  absl::StatusCode status;
};

TEST(DbError, EachErrorNumberHasItsKindAndCode) {
  const Case cases[] = {
      {1213, DbErrorKind::kConflict, absl::StatusCode::kAborted},  // deadlock, certification
      {1205, DbErrorKind::kLockWait, absl::StatusCode::kAborted},
      {1062, DbErrorKind::kDuplicate, absl::StatusCode::kAlreadyExists},
      {1264, DbErrorKind::kPermanent, absl::StatusCode::kOutOfRange},
      {1406, DbErrorKind::kPermanent, absl::StatusCode::kOutOfRange},
      {1690, DbErrorKind::kPermanent, absl::StatusCode::kOutOfRange},
      {1040, DbErrorKind::kUnavailable, absl::StatusCode::kUnavailable},
      {1047, DbErrorKind::kUnavailable, absl::StatusCode::kUnavailable},  // wsrep not ready
      {1290, DbErrorKind::kUnavailable, absl::StatusCode::kUnavailable},  // read-only
      {3100, DbErrorKind::kUnavailable, absl::StatusCode::kUnavailable},  // GR: no writes here
      {3101, DbErrorKind::kConflict, absl::StatusCode::kUnavailable},     // GR: certification
      {1053, DbErrorKind::kUnavailable, absl::StatusCode::kUnavailable},
      {1927, DbErrorKind::kUnavailable, absl::StatusCode::kUnavailable},
      {2013, DbErrorKind::kUnavailable, absl::StatusCode::kUnavailable},
      {1969, DbErrorKind::kTransient, absl::StatusCode::kDeadlineExceeded},
      {3024, DbErrorKind::kTransient, absl::StatusCode::kDeadlineExceeded},
      {1146, DbErrorKind::kTransient, absl::StatusCode::kInternal},  // a schema behind
      {1054, DbErrorKind::kTransient, absl::StatusCode::kInternal},
  };
  for (const Case& c : cases) {
    const absl::Status s = MysqlError(c.code, "HY000", "message");
    EXPECT_EQ(ErrorKindOf(s), c.kind) << c.code << ": " << DbErrorKindName(ErrorKindOf(s));
    EXPECT_EQ(s.code(), c.status) << c.code;
    EXPECT_EQ(MysqlErrno(s), c.code);
    EXPECT_THAT(std::string(s.message()), testing::HasSubstr(absl::StrCat("mysql error ", c.code)));
  }
}

TEST(DbError, ContentionIsConflictOrLockWait) {
  EXPECT_TRUE(IsContention(MysqlError(1213, "40001", "deadlock")));
  EXPECT_TRUE(IsContention(MysqlError(1205, "HY000", "lock wait")));
  EXPECT_TRUE(IsContention(MysqlError(3101, "40000", "group replication rolled it back")));
  EXPECT_FALSE(IsContention(MysqlError(1062, "23000", "duplicate")));
  EXPECT_FALSE(IsContention(absl::AbortedError("not from the database")));
}

TEST(DbError, LostSessionsAreDiscarded) {
  for (int code : {1047, 1053, 1152, 1290, 1927, 2006, 2013, 3100, 4031}) {
    EXPECT_TRUE(IsSessionLost(code)) << code;
  }
  for (int code : {1040, 1062, 1205, 1213, 1969, 3101}) EXPECT_FALSE(IsSessionLost(code)) << code;
}

TEST(DbError, AStatusStorageDidNotClassifyHasAKindByItsCode) {
  EXPECT_EQ(ErrorKindOf(absl::OkStatus()), DbErrorKind::kNone);
  EXPECT_EQ(ErrorKindOf(absl::UnavailableError("pool closed")), DbErrorKind::kUnavailable);
  EXPECT_EQ(ErrorKindOf(absl::InternalError("bug")), DbErrorKind::kTransient);
  EXPECT_EQ(MysqlErrno(absl::InternalError("bug")), 0);
}

TEST(DbError, AKindCanBeGivenAndTravelsWithTheStatus) {
  const absl::Status s =
      WithErrorKind(absl::AbortedError("a fake's deadlock"), DbErrorKind::kConflict);
  EXPECT_EQ(ErrorKindOf(s), DbErrorKind::kConflict);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
}

TEST(DbError, EveryErrorIsCountedByItsNumber) {
  const int64_t before = MysqlErrorCounts()[1213];
  MysqlError(1213, "40001", "deadlock").IgnoreError();
  MysqlError(1213, "40001", "deadlock").IgnoreError();
  CountMysqlError(0);
  EXPECT_EQ(MysqlErrorCounts()[1213], before + 2);
  EXPECT_GE(MysqlErrorCounts()[0], 1);
}

}  // namespace
}  // namespace giftwall::storage
