# Runs `fmhajit-bench-host --quick` and checks that it exits 0 and that its
# JSON parses and has the documented shape (docs/bench.md). Speed is never
# judged here. Usage: cmake -DBENCH=<bench> -DJSON=<out.json> -P CheckQuickBench.cmake

file(REMOVE ${JSON})
execute_process(COMMAND ${BENCH} --quick --json ${JSON} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fmhajit-bench-host --quick exited with ${rc}")
endif()
if(NOT EXISTS ${JSON})
  message(FATAL_ERROR "fmhajit-bench-host --quick wrote no ${JSON}")
endif()
file(READ ${JSON} json)

# Fails unless the JSON has a value at the given path (keys and indices).
function(require)
  string(JSON value ERROR_VARIABLE err GET "${json}" ${ARGN})
  if(err)
    message(FATAL_ERROR "${JSON}: missing ${ARGN}: ${err}")
  endif()
endfunction()

string(JSON schema ERROR_VARIABLE err GET "${json}" schema)
if(err OR NOT schema STREQUAL "fmhajit-bench-host/1")
  message(FATAL_ERROR "${JSON}: not fmhajit-bench-host/1 JSON (${err})")
endif()
foreach(path "quick" "machine;threads" "total_seconds" "fma_peak;0;gflops"
             "compile;cold;median_ms" "compile;memory_hit;median_us"
             "compile;disk_hit;median_ms" "goals;0;status")
  require(${path})
endforeach()
string(JSON cases LENGTH "${json}" forward)
if(cases LESS 1)
  message(FATAL_ERROR "${JSON}: no forward cases")
endif()
math(EXPR last "${cases} - 1")
foreach(i RANGE ${last})
  string(JSON err ERROR_VARIABLE none GET "${json}" forward ${i} error)
  if(NOT none)
    message(FATAL_ERROR "${JSON}: forward case ${i} failed: ${err}")
  endif()
  foreach(path "fmhajit;gflops" "peer;gflops" "speedup" "check;pass" "peak_gflops"
               "peak_gflops_in_turns")
    require(forward ${i} ${path})
  endforeach()
  # The row's peak is the higher of the run's and the one timed in its turns.
  string(JSON peak GET "${json}" forward ${i} peak_gflops)
  string(JSON inTurns GET "${json}" forward ${i} peak_gflops_in_turns)
  if(inTurns GREATER peak)
    message(FATAL_ERROR "${JSON}: forward case ${i}: peak ${peak} below its in-turn peak ${inTurns}")
  endif()
  string(JSON pass GET "${json}" forward ${i} check pass)
  if(NOT pass)
    message(FATAL_ERROR "${JSON}: forward case ${i}: fmhajit and the peer disagree")
  endif()
endforeach()
message(STATUS "${JSON}: valid, ${cases} forward cases")
