# Writes OUT, a C++ source that holds every DIR/*.sql file, sorted by name.
file(GLOB files "${DIR}/*.sql")
list(SORT files)
set(body "")
foreach(path ${files})
  get_filename_component(name "${path}" NAME)
  file(READ "${path}" sql)
  string(APPEND body "    {\"${name}\", R\"giftwall_sql(${sql})giftwall_sql\"},\n")
endforeach()
file(WRITE "${OUT}.tmp" "// Generated from migrations/*.sql by embed_migrations.cmake. Do not edit.
#include \"server/storage/migrator.h\"

namespace giftwall::storage {

const std::vector<Migration>& EmbeddedMigrations() {
  static const std::vector<Migration>* const migrations = new std::vector<Migration>{
${body}  };
  return *migrations;
}

}  // namespace giftwall::storage
")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
