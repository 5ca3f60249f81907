// Replaced as libgantt grows; keeps the target non-empty.
namespace gantt { int placeholder_symbol = 0; }
