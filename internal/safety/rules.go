package safety

import "regexp"

// The rule table of the built-in screen. Each pattern is a regular expression over normalized
// text (see normalize): lower case, no accents, apostrophes dropped, words separated by one
// space, "," at a comma and "|" at a sentence end. Two shorthands keep the table readable:
// "~" stands for up to three arbitrary words, and "$" for the end of a clause. A pattern is
// matched on whole words only.
//
// The rules favour precision: a phrase goes in only when ordinary talk in an anxiety lesson
// ("I feel like I'm dying when I panic", "me muero de nervios", "this exam is killing me", "I
// want to disappear when the teacher calls on me") does not use it. Hyperbole is excluded by
// `unless` (what follows the match in its clause) and denials by `negatable` (a negation in the
// three words before the match, in the same clause). The evaluation corpus in
// testdata/safety holds the phrases each rule is for and the lesson talk it must stay silent on.

// family is the people a learner names when describing being hurt at home.
const familyEN = `(?:my )?(?:dad|father|mom|mum|mother|stepdad|stepfather|stepmom|stepmother|stepbrother|stepsister|step dad|step mom|parents|brother|sister|uncle|aunt|grandpa|grandfather|grandma|grandmother|boyfriend|girlfriend|moms boyfriend|mums boyfriend|dads girlfriend|foster (?:dad|mom|parents))`
const familyES = `(?:mi |mis )?(?:padre|madre|papa|mama|padrastro|madrastra|padres|hermano|hermana|tio|tia|abuelo|abuela|novio|novia|pareja|primo|prima)`
const otherEN = `(?:my )?(?:friend|best friend|bff|classmate|brother|sister|cousin|boyfriend|girlfriend|teammate|roommate|someone i know)`
const otherES = `(?:mi |una |un )?(?:amiga|amigo|mejor amiga|mejor amigo|companera|companero|hermano|hermana|prima|primo|novio|novia)`

// hyperboleEN and hyperboleES are what follows a wish to die when it is a figure of speech.
// Laughter ("lol", "jaja") is not among them: teenagers write it after statements they mean.
const hyperboleEN = `(?:of|from|laughing|because of (?:this|the) (?:exam|test|homework))`
const hyperboleES = `(?:de (?:la verguenza|verguenza|risa|la risa|ganas|hambre|sueno|calor|frio|aburrimiento|envidia|amor|nervios|los nervios|miedo|asco|cansancio|pena ajena|lo aburrido|celos|un ataque|la emocion|emocion|alegria|tanto|lo)|del (?:aburrimiento|cansancio|susto|calor|frio|asco|hambre|estres|examen)|a (?:ver|carcajadas)|estudiando|trabajando|jugando)`

// adultEN and adultES are the people, besides family, a learner names when disclosing abuse.
const adultEN = `(?:he|she|they|someone|somebody|a man|an adult|an older (?:guy|man|boy)|(?:my|our|the) (?:coach|teacher|tutor|neighbor|neighbour|babysitter|pastor|priest|cousin|moms friend|dads friend))`
const adultES = `(?:el|ella|alguien|un senor|un hombre|(?:mi|el|un) (?:entrenador|profesor|profe|vecino|maestro|tutor|padrino|cura|catequista|primo))`
const parentsEN = `(?:they|my (?:parents|mom|mum|dad|mother|father|stepmom|stepdad|stepmother|stepfather|foster parents|grandma|grandpa|aunt|uncle))`

// topicAfter and topicBefore put a first-person phrase in a game or in the mouth of a
// character being studied: what directly follows the phrase ("I keep killing myself in
// Minecraft", "to respawn"), or what directly precedes it ("the speaker says I want to die").
// They are tight on purpose: a learner who names a play or a game elsewhere in the sentence
// ("I'm in the school play and I want to kill myself") is still the one at risk.
const topicAfter = `(?:[a-z]+ ){0,2}(?:(?:in|on|playing) (?:the game|minecraft|fortnite|roblox|the sims|my game|a game|this game|the video game|among us|gta|zelda|terraria|skyrim)|(?:[a-z]+ ){0,2}(?:to respawn|para reaparecer)|en (?:el juego|minecraft|fortnite|roblox|el videojuego))`
const topicBefore = `(?:narrator|speaker|character|protagonist|poet|author|narradora?|personaje|protagonista|poeta|autora?|yo poetico|yo lirico) (?:says|said|writes|wrote|thinks|sings|dice|escribe|piensa|canta|decia|dijo)(?: that| que)? $`

var ruleTable = []ruleSpec{
	// English: suicide, direct.
	{id: "en.direct.kill_myself", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re:     `(?:kill|killing|killed|unalive|unaliving|unalived|off|offing|hang|hanging|drown|drowning|poison|poisoning|shoot|shooting|delete|deleting) myself|(?:end|ending|take|taking) my (?:own )?life|(?:end|ending) (?:it all|everything|it tonight|it today|it for good|it now)|self delete|(?:thinking|thought|think|thoughts) (?:about|of) (?:unaliving|unalive|offing myself)|(?:slit|slitting|slash|slashing) my (?:wrists?|throat)|(?:\||,|i|im|gonna|going to|wanna|want to|should|will|might|about to|ready to|just|lowkey|literally|bout to|ill|fr|ngl|tbh|ugh|actually|finna|literal|neta|bro) kms|(?:i|im) ~(?:should|gonna|going to|wanna|want to|about to|will|might|finna) (?:just |literally |honestly |go )?kys|time to kys|i ~(?:want|wanna|going|gonna|plan|planning|ready|will|might) (?:to )?unalive|(?:wanna|want to|gonna|going to|ready to|finna|bout to) unalive (?:myself|\||,|lol|fr|rn|tonight|today|so bad|ngl)`,
		unless: `(?:in the foot|in the face with|with (?:work|homework|this|these)|studying|working|training|practicing|over (?:this|the|a|my))`},
	{id: "en.direct.want_to_die", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `i ~(?:want|wanna|wish|am going|m going|gonna|plan|planning|ready) (?:to )?die|and (?:i )?(?:just )?(?:want|wanna|wish) to die|(?:want|wanna) to die (?:so bad|so badly|right now|already|every day|all the time)`, unless: hyperboleEN},
	{id: "en.direct.suicidal", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `(?:i|im|i am|ive|i have|feeling|feel) ~(?:suicidal|suicide note|goodbye note)|i ~(?:think|thinking|thought|thoughts) (?:about|of) (?:suicide|killing myself|ending my life|dying|ending it)|i ~(?:commit|committing) suicide|(?:thinking|thought|think|dream|dreaming|fantasize|fantasizing) (?:about|of) (?:jumping|throwing myself|stepping|walking|crashing|driving|running) (?:off|in front of|into|under|from) (?:[a-z]+ ){0,3}(?:car|train|bus|truck|bridge|roof|building|cliff|window|traffic|tracks)|(?:planning|planned|plan|planing) (?:out )?my (?:suicide|death|own death)|(?:ill|i will|im going to|i am going to) be dead (?:by|before|soon|tomorrow|tonight|next)|i ~(?:have|having|had|get|getting|keep having) ~(?:suicidal thoughts|thoughts of suicide|thoughts about suicide|thoughts of killing myself|thoughts of dying)`},
	{id: "en.direct.jump", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `(?:going|gonna|about|want|wanna|plan|planning|ready) to (?:jump|throw myself) (?:off|from|in front of|under) ~(?:bridge|roof|building|balcony|window|cliff|train|car|bus|truck|ledge|tracks|overpass)|throw myself (?:off|in front of|under) ~(?:bridge|roof|building|balcony|window|cliff|train|car|bus|truck|ledge|tracks)|(?:im|i am) (?:standing |sitting |up )?(?:on|at) (?:the|a) (?:bridge|roof|rooftop|ledge|train tracks|tracks) (?:[a-z]+ ){0,5}(?:jump|end it|goodbye|tonight|right now|now)`},
	// English: plans, means and times.
	{id: "en.plan.means", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `(?:i|ive|im) ~(?:saved|saving|stashed|stashing|hid|hiding|hidden|collected|collecting|hoarded|hoarding|stockpiled|stockpiling|counted|counting) ~(?:pills|tablets|meds|painkillers|sleeping pills)|(?:enough|all (?:my|the|of my)) (?:pills|tablets|meds|painkillers|sleeping pills) ~(?:to (?:die|end it|never wake up|do it|kill myself|overdose)|saved|ready|hidden)|(?:the|a|my) (?:rope|noose) (?:is|s) (?:ready|tied|up)|(?:bottle of|all (?:my|the)|a handful of|a bunch of) (?:pills|tablets|meds|painkillers|sleeping pills) (?:next to me|in front of me|in my hand|with me|ready|right here)|(?:pills|tablets|meds|painkillers) (?:[a-z]+ ){0,8}(?:take|swallow|down) (?:them all|all of them)|(?:bridge|roof|building|cliff|balcony|window) (?:[a-z]+ ){0,4}(?:is|s) (?:high|tall) enough|(?:rope|noose|pills|blade|razor|gun|knife|poison) (?:[a-z]+ ){0,4}to (?:hang myself|kill myself|end it|end my life|overdose|shoot myself)|i ~(?:tied|made|have|bought|got|found|tested) (?:a|the|my) (?:noose|rope to hang myself|rope ready)|(?:going to|want to|plan to|planning to|about to|will|ill) (?:take|swallow|down|overdose on) (?:all (?:of )?(?:my|the)|a (?:whole )?bottle of|every|enough) ~(?:pills|tablets|meds|medication|painkillers|sleeping pills)|(?:going to|want to|plan to|planning to|about to|will|ill|how to) overdose|i ~(?:found|have|got|took|bought) (?:my \w+ |a |the )?(?:gun|pistol|rifle) (?:[a-z]+ ){0,5}(?:use it on myself|to my head|end it|do it|kill myself|shoot myself)|(?:im|i am) (?:going|heading|walking|driving|on my way) to the (?:bridge|train tracks|tracks|roof|rooftop|cliff) (?:tonight |now |right now )?(?:to jump|to end it|and jump|for the last time|to say goodbye)|(?:i have|ive got|i got) a plan (?:to|for how to|of how to) (?:die|end it|kill myself|do it)|(?:i|ive) ~(?:planned|picked|chose|chosen|decided) (?:how|when|where) (?:i will|ill|im going to|im gonna|to) (?:do it|die|end it|kill myself)`},
	{id: "en.plan.last_day", cat: CategorySuicide, sev: SeverityImminent,
		re: `my last (?:day|night|week) (?:alive|on earth|on this earth|of my life|ever)|(?:this is|tonight is|today is|tomorrow is|its|will be|tonight will be|today will be|todays|tonights|tomorrows) my last (?:day|night) (?:\||,|lol|fr|honestly|alive|here)|(?:(?:tonight|today|tomorrow) (?:is|s)|tonights|todays) the (?:night|day) (?:i|ill|im going to) (?:do it|end it|die|go|kill myself|end everything)`},
	{id: "en.plan.not_here", cat: CategorySuicide, sev: SeverityHigh,
		re:     `(?:wont|will not|am not going to|im not going to|not going to|aint going to) be (?:here|around|alive) (?:next (?:week|month|year|monday|friday|weekend|time|semester)|tomorrow|anymore|any more|much longer|for much longer|for long|by (?:then|tomorrow|monday|next week|the weekend|the end of)|after (?:tonight|today|this week))`,
		unless: `(?:because|cause|since|as|we|were|im going|i am going|im visiting|ill be|i will be|on|for|at|in|due|my family|our family|so i|so you|so can)`},
	{id: "en.plan.goodbye", cat: CategorySuicide, sev: SeverityHigh, negatable: true,
		re:     `(?:wrote|writing|write|written|left|leave|leaving|recorded|recording|finished) (?:a |my |some |the |all my )?(?:goodbye|suicide|farewell|last) (?:note|notes|letter|letters|message|messages|video)|this is (?:my )?goodbye|(?:goodbye|bye) (?:forever|cruel world|world)|(?:just )?wanted to say goodbye (?:to everyone|before i go|forever|before its too late)|this is the end (?:for me|of me)|(?:saying|say|said) goodbye to (?:everyone|everybody|you all|all of you|the world) (?:tonight|today|forever|for good|for the last time|before i)|(?:wrote|writing|written|left) (?:letters|notes) (?:to|for) (?:everyone|everybody|my family|all my friends|my parents)(?: i love| to read after| for after)?|(?:when|after|once) (?:im|i am) gone|(?:when|after|once) i (?:die|am dead|m dead)|i wont need (?:it|them|these|this|my \w+|anything) (?:anymore|any more|where im going|much longer|soon)`,
		unless: `(?:on|to (?:the|my|our|a)|for (?:the|my|a|our|school|work|camp|vacation|college)|away|abroad|next|this|camping|at|to (?:our|my|the) (?:teacher|class|coach|friend|school))`},
	// English: suicide, passive.
	{id: "en.passive.not_alive", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:dont|do not|no longer) want to (?:be alive|exist|keep living|go on living)|(?:im|i am) (?:so )?(?:done|finished) (?:with )?(?:living|life|being alive)|(?:want|wish i could|need) (?:to )?(?:stop existing|not exist|cease to exist|stop living|not be alive)|(?:dont|do not|cant|cannot) see myself (?:being )?(?:alive|here|around|living) (?:next|in|by|much|for|after)|(?:dont|do not) want to wake up (?:tomorrow|again|ever|anymore|any more|ever again|in the morning|\||,)|(?:want|wish|need) (?:everything|it all|my life|this life|all of this) to (?:end|stop|be over)|(?:dont|do not) want to (?:live|be here) (?:anymore|any more)|(?:dont|do not) want to live $`},
	{id: "en.passive.wish_dead", cat: CategorySuicide, sev: SeverityHigh,
		re: `wish (?:that )?i (?:was|were|could be|had been) (?:dead|never born)|wish i (?:had never|hadnt|had not|was never|wasnt|werent) (?:been )?born|(?:hope|wish) i (?:dont|do not|wont|never|wouldnt) wake up|(?:sleep|go to sleep|fall asleep) (?:and|forever and) never wake up|(?:want|wish i could) (?:to )?(?:sleep|disappear) forever`},
	{id: "en.passive.no_point", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:life|living|my life) (?:isnt|is not|aint|is no longer) worth (?:it|living)|(?:no|whats the|what is the|dont see the|cant see the) point (?:in |of )?(?:living|being alive|my life|going on)|(?:nothing|no reason|no one|nobody) (?:left )?to live for|no reason to (?:live|keep living|go on)|(?:tired|sick) of (?:living|being alive)`},
	// English: suicide, indirect.
	{id: "en.indirect.better_off", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:better off|happier|easier|fine|ok|okay) (?:if i (?:was|were) (?:dead|gone|not here|never born|not around)|if i (?:died|wasnt here|werent here|didnt exist|disappeared|was not here))|(?:everyone|everybody|people|the world|my family|my parents|my friends|they|you all) (?:would|will|d) (?:all )?be (?:better (?:off )?|happier |fine |ok )?without me`},
	{id: "en.indirect.miss_me", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:no one|noone|nobody) (?:would|will|is going to|d) (?:even )?(?:miss me|notice if i (?:was|were|am) gone|care if i (?:died|was gone|were gone|was dead|disappeared|wasnt here))`},
	{id: "en.indirect.giving_away", cat: CategorySuicide, sev: SeverityHigh,
		re:     `(?:giving|gave|given|give|gonna give|going to give) away (?:all )?(?:of )?my (?:things|stuff|belongings|possessions|games|xbox|playstation|ps5|switch|phone|jewelry|collection|favorite \w+|pets?|cat|dog|guitar|art|books|plushies)|(?:giving|gave|given) (?:all )?(?:of )?my (?:things|stuff|belongings|possessions|games|favorite \w+) away|i want (?:you|him|her|them|my \w+|someone) to have (?:all )?my (?:things|stuff|games|xbox|phone|cat|dog|pets?|guitar|favorite \w+)`,
		unless: `(?:to charity|for charity|to goodwill|because (?:im|i am|we|were|they|it|i) (?:moving|outgrew|too old|dont|no longer|getting))`},
	{id: "en.indirect.burden", cat: CategorySuicide, sev: SeverityHigh, negatable: true,
		re: `(?:im|i am) (?:just )?(?:a|such a) burden (?:to|on|for) (?:everyone|everybody|my family|my parents|everyone around me)`},
	{id: "en.indirect.not_around", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:wont|will not) be (?:around|here) (?:much longer|for much longer|for long)|(?:soon|shortly) (?:i|ill|i will) (?:be gone|not be here|not be around|be dead)|(?:wont|will not|dont|do not|will never) have to (?:deal with|worry about|put up with|see) me (?:much longer|anymore|any more|for long|soon|again|ever again)`},
	// English: self-harm.
	{id: "en.self_harm.cutting", cat: CategorySelfHarm, sev: SeverityHigh, negatable: true,
		re:     `i ~(?:cut|burn|burned|burnt) (?:myself|my (?:arms|wrists|legs|skin|thighs))|(?:cutting|burning|scratching) (?:myself|my (?:arms|wrists|legs|skin|thighs))|i ~(?:self harm|selfharm|self harming|self harmed|self injure)`,
		unless: `(?:while|by accident|accidentally|on (?:a|the|some)|shaving|cooking)`},
	{id: "en.self_harm.want", cat: CategorySelfHarm, sev: SeverityHigh, negatable: true,
		re: `(?:want|wanna|urge|urges|going|gonna|need) (?:to )?(?:hurt|harm|cut|punish) myself|(?:hurt|hurting|harm|harming|punish|punishing) myself (?:on purpose|deliberately|to feel|because i deserve)|(?:ive been|i have been|been|i keep|i started|started|i am|im) (?:cutting|burning myself|self harming) (?:again|lately|every|for)|i (?:relapsed|relapse|slipped) (?:and cut|on cutting|on self harm)`},
	{id: "en.self_harm.eating", cat: CategorySelfHarm, sev: SeverityHigh, negatable: true,
		re: `(?:make|making|made|force|forcing|forced) myself (?:throw up|puke|vomit|sick|barf|purge)|(?:throw|throwing|threw|puke|puking|puked) up (?:after (?:i eat|eating|every meal|meals|dinner|lunch|i ate)|on purpose|so i (?:dont|wont|do not) gain|everything i eat)|i ~(?:purge|purging|purged|binge and purge)|(?:starving|starve|starved) myself|i ~(?:havent|have not|didnt|dont|barely|stopped) (?:eaten|eat|eating|eat anything|eaten anything) ~(?:to lose weight|so i can lose|so i lose|because im fat|because im so fat|because i feel fat|on purpose|to be skinny|to get skinny|to be thin|until im thin)|i (?:only|barely) (?:eat|ate|have) ~(?:calories|cal|kcal) (?:a|per) day|i ~(?:eat|have|allow myself|let myself eat) (?:only |just |like |about |under |less than |max )?[1-9][0-9]{1,2} (?:calories|cal|kcal) (?:a|per) day|(?:taking|take|took|using) (?:laxatives|diet pills) (?:to|so|because|after)|i ~(?:skip|skipping|skipped) (?:every |all (?:my )?)?(?:meals|breakfast and lunch|lunch and dinner|eating) (?:to|so|because) ~(?:lose|thin|skinny|fat|weight)|(?:so|too) fat (?:i|that i) (?:need|have|want) to stop eating|i ~(?:eat|eating|ate|starve|starving|skip|skipping|skipped|stop eating|stopped eating|fast|fasting|purge|purging|throw up|puke) (?:[a-z0-9]+ ){0,6}(?:to lose weight|so i can lose|so i lose|lose more weight|to be skinny|to get skinny|to be thin|to get thin|because im fat|because im so fat|because i feel fat|because im too fat|until im thin|until im skinny)|so i (?:throw up|puke|make myself (?:sick|throw up|puke))`},
	// English: abuse.
	{id: "en.abuse.hits_me", cat: CategoryAbuse, sev: SeverityHigh, negInside: true,
		re: familyEN + ` ~(?:hits|hit|beats|beat|punches|punched|kicks|kicked|slaps|slapped|chokes|choked|abuses|abused|burns) me`},
	{id: "en.abuse.abused", cat: CategoryAbuse, sev: SeverityHigh, negatable: true,
		re: `(?:i|im|i am|i was|ive been|i have been|i get|i got) ~(?:sexually abused|abused|molested|raped|sexually assaulted|beaten up at home)`},
	{id: "en.abuse.sexual", cat: CategoryAbuse, sev: SeverityHigh, negInside: true,
		re:     `(?:` + familyEN + `|` + adultEN + `) ~(?:touches|touched|touching|keeps touching|touch|molests|molested|gropes|groped|feels me up) me|(?:touches|touched|touching|touch|grabs|grabbed) (?:me )?(?:down there|in my private|my private|my privates|where i dont|where i do not|where i didnt|where i did not|where (?:he|she|they) (?:shouldnt|should not)|in places|under my (?:clothes|shirt|skirt|pants))|(?:touched|touches) me (?:inappropriately|in a bad way|in a way i dont like|when no one|when nobody|at night|where)|(?:makes|made|forces|forced|tries to make|wants) me (?:to )?(?:touch him|touch her|touch his|take off my clothes|undress|do (?:sexual |bad |weird |gross )?things|watch (?:porn|videos)|send (?:him|her) (?:pics|pictures|photos|nudes))|(?:asked|asks|asking|pressuring|pressured|wants|keeps asking) me (?:for|to send) (?:nudes|naked (?:pics|pictures|photos)|pics of my body)|(?:comes|came|sneaks|snuck|gets) into my (?:room|bed) (?:at night|when|every night)|(?:put|puts|putting|stuck|sticks) (?:his|her|their) hands? (?:in|down|inside|under|up) my (?:pants|shirt|skirt|underwear|clothes|shorts|dress)|(?:sends|sent|showed|shows|send) me (?:pictures|pics|photos|videos) of (?:himself|herself|his (?:body|privates|parts|thing)|her (?:body|privates|parts))|(?:sends|sent|showed|shows) me (?:nudes|naked (?:pictures|pics|photos)|porn)|(?:gets|got|climbs|climbed) into my bed`,
		unless: `(?:on the (?:shoulder|arm|back|hand|head)|to (?:say|get|wake)|about (?:her|his|their|the|a|my) (?:crush|party|surprise|present|gift|test|exam|quiz|grade|plan|boyfriend|girlfriend|birthday)|because its a surprise|recipe)`},
	// A secret an adult demands is told with a negation ("told me not to tell").
	{id: "en.abuse.secret", cat: CategoryAbuse, sev: SeverityHigh,
		re:     `(?:told|tells|made|makes|said|says|warned) (?:me )?(?:not to|to not|never to|i cant|i cannot|i shouldnt|i must not|i better not) tell (?:anyone|anybody|my (?:mom|mum|dad|parents|mother|father|teacher)|no one|nobody|or|\||,)|(?:its|it is|this is) our (?:little )?secret (?:\||,|and|so|he|she|dont|do not)|(?:told|tells|made|makes|wants|asked) me (?:to )?keep (?:it|this|what happened|what (?:he|she) (?:did|does)) (?:a )?secret|if i (?:ever )?tell (?:anyone|anybody|someone|my (?:mom|mum|dad|parents|teacher)) (?:he|she|they) (?:will|ll|would|d|is going to|said)`,
		unless: `(?:about (?:her|his|their|the|a|my) (?:crush|party|surprise|present|gift|test|exam|quiz|grade|plan|boyfriend|girlfriend|birthday)|because its a surprise|recipe)`},
	{id: "en.abuse.locked_in", cat: CategoryAbuse, sev: SeverityHigh, negInside: true,
		re: parentsEN + ` ~(?:lock|locks|locked|keep|keeps|kept) me (?:in|inside) (?:my room|the closet|the basement|a room|the house|the garage|the bathroom|the shed|a closet)|i (?:get|got|am|was|m|have been|ve been|keep getting) locked (?:in|inside) (?:my room|the closet|the basement|a room|the garage|the bathroom|the shed|a closet)`},
	// Neglect is told with a negation ("there's no food", "they don't feed me"), so the rule
	// cannot use one to drop a match.
	{id: "en.abuse.neglect", cat: CategoryAbuse, sev: SeverityHigh,
		re: `(?:there is|theres|there s|there was|there isnt|there is never|theres never) (?:no|never any|any|never) food (?:at home|in the house|in my house|at my house|for days)|(?:nobody|no one|they dont|they do not|they never|` + parentsEN + ` (?:dont|doesnt|do not|does not|never)) (?:feed|feeds) me|(?:give|gives) me (?:food|anything to eat|dinner|lunch|breakfast|meals)|(?:havent|have not|hasnt|didnt) (?:eaten|had food|had anything to eat) (?:in|for) ~(?:days) (?:because|cause|since) (?:there is no|theres no|there isnt any|we have no|my parents|nobody|no one)|(?:left|leave|leaves) me (?:home )?alone for (?:days|the whole weekend|a week|two days|three days|the weekend)|(?:not allowed|arent allowed|isnt allowed|wont let me|dont let me|doesnt let me|never let me) (?:to )?eat (?:until|as (?:a )?punishment|for days|when (?:i|they|he|she)|unless|if i)|(?:havent|hasnt|didnt|have not|has not) fed me (?:in|for|since)`},
	{id: "en.abuse.unsafe_home", cat: CategoryAbuse, sev: SeverityHigh,
		re: `(?:dont|do not|never) feel safe (?:at home|in my (?:house|home)|with my (?:dad|mom|mum|parents|stepdad|stepmom))|(?:im|i am) not safe at home|(?:scared|afraid|terrified) (?:to go|of going) (?:back )?home`},
	// English: immediate danger.
	{id: "en.danger.overdose", cat: CategoryDanger, sev: SeverityImminent,
		re: `i (?:just )?(?:took|swallowed|have taken|ve taken|overdosed on) (?:like |about |around |almost |over |more than )?(?:a (?:whole )?bottle of|all (?:of )?(?:my|the)|too many|a bunch of|a lot of|[0-9]+) ~(?:pills|tablets|meds|medication|painkillers)`},
	{id: "en.danger.threat", cat: CategoryDanger, sev: SeverityImminent,
		re: `(?:threatening|threatened|threatens) to (?:kill|hurt|stab|shoot) me|(?:pointing|pointed|has) a (?:gun|knife) at me|(?:breaking|broke) into (?:my|our) (?:house|home|apartment|flat)|(?:is|are|s|re) trying to (?:kill|hurt|rape) me`},
	// English: concern for someone else.
	{id: "en.other.kill_self", cat: CategoryConcernOther, sev: SeverityConcern, negatable: true,
		re:   `(?:kill|kills|killed|killing|hurt|hurts|hurting|harm|harms|harming|cut|cuts|cutting|hang|hangs|hanged|hanging|drown|drowns|drowned|poison|poisons|poisoned|shoot|shoots|shot|stab|stabs|stabbed|starve|starves|starving|unalive|unalived) (?:himself|herself|themselves|themself)|(?:end|ends|ended|ending|take|takes|took|taking) (?:his|her|their) (?:own )?(?:life|lives)|(?:commit|commits|committed|committing) suicide`,
		whom: whomThird, unless: `(?:in the foot|on purpose to get out|by accident|accidentally)`},
	{id: "en.other.suicidal", cat: CategoryConcernOther, sev: SeverityConcern, negatable: true,
		re: otherEN + ` ~(?:is|seems|has been|s been|might be|sounds|feels) (?:suicidal|self harming)|` + otherEN + ` ~(?:wants|want|wanted|is going|plans) to die`},
	{id: "en.other.abused", cat: CategoryConcernOther, sev: SeverityConcern, negInside: true,
		re: otherEN + `s (?:dad|mom|mum|father|mother|stepdad|parents|uncle|stepmom|brother|cousin|coach) ~(?:hits|beats|abuses|punches|touches|molests|starves|locks up) (?:him|her|them)`},

	// Spanish: suicide, direct.
	{id: "es.direct.matarme", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re:     `(?:quiero|voy a|pienso|pensando en|he pensado en|pensado en|pensar en|ganas de|necesito|deberia|me gustaria) (?:acabar|terminar) con (?:todo|todo esto|esto|esta vida) (?:\||,|ya|de una vez|hoy|esta noche|para siempre)|(?:quiero|voy a|pienso|pensando en|he pensado en|pensado en|pensar en|ganas de|intentar|decidi|planeando|necesito|deberia|podria|prefiero|tengo que|me gustaria|quisiera|me dan ganas de) (?:\w+ )?(?:matarme|suicidarme|quitarme la vida|colgarme|ahorcarme|desvivirme|envenenarme|cortarme las venas|irme de este mundo)|me (?:quiero|voy a|pienso|gustaria|dan ganas de|quisiera|tengo que|deberia|dan ganas) (?:matar|suicidar|quitar la vida|colgar|ahorcar|desvivir|envenenar|ir de este mundo|cortar las venas)|(?:voy a|me voy a|quiero|pienso) (?:tomar|tomarme|tragarme|tragar) (?:todas (?:las|mis)|un bote de|todo el bote de|un monton de) ~(?:pastillas|pildoras|medicamentos|medicinas|calmantes)|(?:acabar|terminar) con mi vida|(?:hoy|esta noche|manana|ya) me (?:mato|suicido)|me (?:mato|suicido) (?:hoy|esta noche|manana|ya) (?:\||,)`,
		unless: hyperboleES},
	{id: "es.direct.morir", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `(?:me quiero|quiero|quisiera|me quisiera|ganas de) morir(?:me)?`, unless: hyperboleES},
	{id: "es.direct.suicida", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `(?:tengo|he tenido|tener) ~(?:pensamientos|ideas|ideacion) suicidas?|pienso (?:mucho )?en (?:el suicidio|suicidarme)|carta (?:de despedida|de suicidio) (?:porque|para)`},
	{id: "es.direct.saltar", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `(?:(?:voy a|quiero|pienso|pensando en|pensado en|necesito|ganas de|deberia|decidi) (?:saltar|tirarme|lanzarme|aventarme)|me (?:voy a|quiero|pienso|dan ganas de) (?:tirar|lanzar|aventar)|me (?:tiro|lanzo|avento)) (?:(?:de|desde|por|bajo|a) (?:el|la|las|un|una|mi)|del|al) (?:puente|edificio|balcon|ventana|azotea|tejado|terraza|techo|acantilado|metro|tren|vias|rio)`},
	// Spanish: plans, means and times.
	{id: "es.plan.means", cat: CategorySuicide, sev: SeverityImminent, negatable: true,
		re: `(?:guardando|juntando|escondiendo|ahorrando|he guardado|he juntado|guarde|junte|escondi|tengo guardadas|tengo escondidas) ~(?:pastillas|pildoras|medicamentos|calmantes)|(?:suficientes|todas (?:las|mis)) (?:pastillas|pildoras|medicinas|calmantes) (?:para (?:morir|matarme|no despertar|acabar)|guardadas|escondidas|listas)|me las (?:tomo|voy a tomar|tomare|trago|voy a tragar) todas|(?:la|una|mi) (?:cuerda|soga) (?:ya )?(?:esta|estan) (?:lista|preparada|atada)|(?:tengo|compre|prepare|consegui|ate) (?:una|la) (?:cuerda|soga) (?:para (?:colgarme|ahorcarme|matarme)|lista|preparada)|(?:cuerda|soga|pastillas|cuchilla|navaja|pistola|arma|veneno) (?:[a-z]+ ){0,4}para (?:ahorcarme|colgarme|matarme|suicidarme|morir|quitarme la vida|acabar con todo)|(?:tengo|ya tengo) (?:un|el) plan (?:para (?:matarme|morir|suicidarme|acabar con todo|hacerlo))|(?:ya )?(?:se|decidi|elegi) (?:como|cuando|donde) (?:lo voy a hacer|voy a hacerlo|me voy a matar|hacerlo|matarme)|(?:voy|me voy|estoy|ya estoy) (?:al|en el|a el|sobre el) puente (?:esta noche|ahora|hoy|para saltar|a saltar|y voy a saltar)`},
	{id: "es.plan.last_day", cat: CategorySuicide, sev: SeverityImminent,
		re:     `(?:es|sera|este es|hoy es|manana es) mi ultimo dia(?: de vida| en este mundo| vivo| viva)?|(?:esta noche|hoy|manana|este fin de semana) (?:lo hago|me mato|acabo con todo|termino con todo|me despido para siempre)|(?:acabar|terminar|acabo|termino) con todo (?:esta noche|hoy|ya|de una vez|manana)`,
		unless: `(?:de (?:clases|clase|escuela|colegio|trabajo|vacaciones|curso|campamento|practicas)|en (?:el|la|este|esta) (?:colegio|escuela|trabajo|equipo|ciudad|campamento)|aqui en|con (?:el|la|los))`},
	{id: "es.plan.no_estare", cat: CategorySuicide, sev: SeverityHigh,
		re:     `(?:ya no|no) (?:voy a estar|estare) (?:aqui|aca|mas|viva|vivo|por aqui) ~(?:la semana que viene|la proxima semana|manana|el lunes|pronto|mucho tiempo|el proximo mes|el ano que viene)|(?:pronto|dentro de poco) (?:ya )?no (?:estare|voy a estar) (?:aqui|aca|mas|con ustedes)|(?:manana|pronto|la semana que viene|el lunes) ya no (?:voy a estar|estare)(?: aqui| aca| mas)? (?:\||,)`,
		unless: `(?:porque|ya que|pues|por (?:el|un|una|unas|unos)|de (?:viaje|vacaciones)|nos mudamos|me mudo|me voy de|estare en|voy a estar en)`},
	{id: "es.plan.despedida", cat: CategorySuicide, sev: SeverityHigh, negatable: true,
		re:     `(?:escribi|escribiendo|escrito|deje|dejando|he dejado|escribo|grabe|terminando|termine) (?:una |mi |mis |unas |las |un )?(?:cartas?|notas?|mensajes?|video) (?:de despedida|de adios|de suicidio)|esta es mi despedida|(?:adios|chao) (?:para siempre|a todos para siempre|mundo cruel|mundo)|me estoy despidiendo de (?:todos|todo el mundo|ustedes|mi familia)|cuando (?:yo )?(?:ya )?no (?:este|estare|exista)|cuando (?:me muera|este muert[oa])|(?:ya )?no (?:voy a necesitar|necesitare|necesito) (?:mis cosas|nada de esto|mis \w+|esto) ~(?:donde voy|ya|mas|nunca mas)`,
		unless: `(?:en (?:casa|el colegio|clase|la escuela)|de vacaciones|de viaje|a (?:la|mi) (?:profe|profesora|profesor|maestra))`},
	// Spanish: suicide, passive.
	{id: "es.passive.no_quiero_vivir", cat: CategorySuicide, sev: SeverityHigh,
		re: `no quiero (?:seguir )?(?:viviendo|existiendo|existir|estar viva|estar vivo)|no quiero vivir $|no quiero vivir mas $|ya no quiero (?:seguir|estar) (?:aqui|en este mundo|viv[oa]|con vida)|(?:quiero|quisiera) (?:dejar de existir|dejar de vivir|no existir)|no quiero (?:despertar|despertarme) (?:nunca|mas|nunca mas|manana|otra vez)`},
	{id: "es.passive.ojala", cat: CategorySuicide, sev: SeverityHigh,
		re: `ojala (?:que )?(?:no (?:despertara|despertase|me despertara|me despierte|hubiera nacido|existiera|existiese)|me muriera|me muera|estuviera muert[oa]|me durmiera y no despertara)`},
	{id: "es.passive.sin_sentido", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:la vida|vivir|mi vida) no (?:vale|tiene) (?:la pena|sentido)|no (?:tengo|hay) (?:razones|motivos|nada|ninguna razon|ningun motivo) (?:para|por (?:el|la) que) (?:vivir|seguir viviendo)|no le (?:veo|encuentro) sentido a (?:la vida|vivir|seguir viviendo|mi vida|nada)|(?:cansad[oa]|hart[oa]) de vivir|(?:dormir|dormirme) y no despertar|(?:dormir|desaparecer) para siempre|(?:prefiero|preferiria) estar muert[oa]`},
	// Spanish: suicide, indirect.
	{id: "es.indirect.mejor_sin_mi", cat: CategorySuicide, sev: SeverityHigh,
		re: `(?:todos|todo el mundo|mi familia|mis padres|la gente|mis amigos) (?:estarian|estaria|estaran|estara|vivirian|viviria) mejor sin mi`},
	{id: "es.indirect.nadie", cat: CategorySuicide, sev: SeverityHigh,
		re: `nadie me (?:extranaria|echaria de menos|extranara|echara de menos)|(?:a )?nadie le (?:importaria|importara) si (?:me muriera|me muero|desapareciera|no estuviera)`},
	{id: "es.indirect.regalando", cat: CategorySuicide, sev: SeverityHigh,
		re:     `(?:regalando|regale|he regalado|regalado|voy a regalar|estoy regalando|regalo|di|he dado|estoy dando|doy) (?:todas )?(?:todos )?(?:mis cosas|mis pertenencias|mi ropa|mis juegos|mi consola|mis libros|mi movil|mi celular|mis peluches|mi perro|mi gato|mis mascotas|mi guitarra|mis dibujos)|quiero que (?:tu|alguien|mi \w+|te) (?:te )?quedes? (?:con )?(?:todas )?mis cosas`,
		unless: `(?:\w+ )?(?:a la caridad|para la caridad|a una ong|a la iglesia|a beneficencia|porque (?:ya no me|nos mudamos|me mudo|no me quedan|me quedan pequen))`},
	{id: "es.indirect.carga", cat: CategorySuicide, sev: SeverityHigh, negatable: true,
		re: `soy (?:solo )?una carga (?:para|a) (?:todos|todo el mundo|mi familia|mis padres|los demas)`},
	// Spanish: self-harm.
	{id: "es.self_harm.cortarme", cat: CategorySelfHarm, sev: SeverityHigh, negatable: true,
		unless: `(?:cortando|cocinando|sin querer|por accidente|pelando|con el papel|jugando)`,
		re:     `me (?:corto|corte|cortaba|he cortado|hago cortes|hice cortes|lastimo|lastime) (?:con (?:una |un |la |el )?(?:cuchilla|navaja|cuchillo|tijeras|vidrio|cristal|sacapuntas|hoja)|(?:en )?(?:los brazos|las munecas|las piernas|la piel|los muslos))|me (?:corto|corte|cortaba|he cortado|quemo|queme|he quemado) (?:los brazos|las munecas|las piernas|la piel|los muslos)|(?:quiero|ganas de|necesito|voy a) (?:cortarme|hacerme dano|lastimarme|autolesionarme|quemarme)|me (?:hago|hice|he hecho) dano (?:a proposito|a mi mism[oa]|yo mism[oa])|me (?:autolesiono|autolesione|he autolesionado)`},
	{id: "es.self_harm.comida", cat: CategorySelfHarm, sev: SeverityHigh, negatable: true,
		re: `me (?:provoco|provoque|hago|obligo a|fuerzo a) (?:el |los )?(?:vomito|vomitos|vomitar)|(?:vomito|vomite|devuelvo|devolvi) (?:despues de (?:comer|cada comida|la cena|cenar)|a proposito|para no engordar|todo lo que como)|me (?:mato|estoy matando|estoy muriendo|muero) de hambre (?:para|a proposito|porque (?:estoy|me siento) gord)|(?:no como|dejo de comer|deje de comer|no he comido|sin comer|no comer|dejar de comer|no ceno|no desayuno) ~(?:para adelgazar|para bajar de peso|para no engordar|porque estoy gorda|porque estoy gordo|porque me siento gorda|porque me siento gordo|a proposito|para estar flaca|para estar delgada|hasta estar delgada)|(?:solo|apenas) como ~(?:calorias) al dia|(?:tomo|tomando|tome|me tomo) laxantes (?:para|despues|porque)|me salto (?:todas )?las comidas (?:para|porque)|(?:no como|casi no como|apenas como|dejo de comer|deje de comer|ayuno|ayunar|me salto|me saltaba|vomito|vomitar|no ceno|no desayuno|sin comer) (?:[a-z0-9]+ ){0,6}(?:para (?:adelgazar|bajar de peso|no engordar|estar delgad[oa]|estar flac[oa]|perder peso)|porque (?:estoy|me siento|me veo) (?:muy |tan )?gord[oa])`},
	// Spanish: abuse.
	{id: "es.abuse.me_pega", cat: CategoryAbuse, sev: SeverityHigh, negInside: true,
		re: familyES + ` ~(?:me pega|me pegan|me golpea|me golpean|me maltrata|me maltratan|me pego|me golpeo|me ahorca|me da palizas|me dio una paliza|abusa de mi|abuso de mi)`},
	{id: "es.abuse.abusaron", cat: CategoryAbuse, sev: SeverityHigh, negatable: true,
		re: `(?:abusaron|han abusado|ha abusado) de mi|me (?:han|ha) (?:violado|abusado)|me violaron`},
	{id: "es.abuse.sexual", cat: CategoryAbuse, sev: SeverityHigh, negInside: true,
		re:     `(?:` + familyES + `|` + adultES + `) ~me (?:toca|toco|tocaba|manosea|manoseo|manoseaba|acosa|acoso|agarra sus|mete mano)|me (?:toca|toco|tocaba|manosea|manoseaba) (?:ahi|ahi abajo|mis partes|las partes|donde no|por debajo|cuando no hay nadie|por las noches|de noche|cuando estamos sol)|me (?:obliga|obligo|obligaba|fuerza|forzo|hace|hizo) (?:a )?(?:tocarlo|tocarla|tocarle|quitarme la ropa|desnudarme|hacer cosas|ver (?:videos|porno)|mandarle fotos)|me (?:pide|pidio|esta pidiendo|pidiendo) (?:fotos|videos) (?:desnud[oa]|intimas|sin ropa|de mi cuerpo)|(?:entra|se mete|viene|se metia|entraba) (?:en|a) mi (?:cuarto|cama|habitacion) (?:por la noche|de noche|cuando|todas las noches)|(?:entra|se mete|se metia|entraba|se acuesta|se acostaba) (?:en|a) mi cama|me (?:metio|mete|metia) (?:la mano|las manos|mano) (?:en|debajo de|por debajo de|dentro de) (?:mi|la) (?:ropa|falda|pantalon|camisa|ropa interior|calzones|bragas)|me (?:manda|mando|envia|envio|ensena|enseno|muestra|mostro) (?:fotos|videos) (?:de sus partes|desnud[oa]|de su cuerpo|porno|de el desnudo|de ella desnuda)|me (?:manda|mando|envia|ensena|enseno) (?:porno|videos porno)`,
		unless: `(?:el hombro|la espalda|la mano|la cabeza|el pelo|para (?:saludar|despertar)|(?:sobre|de) (?:su|la|el) (?:novio|novia|fiesta|sorpresa|regalo|examen|crush))`},
	{id: "es.abuse.secreto", cat: CategoryAbuse, sev: SeverityHigh,
		re:     `me (?:dijo|dice|ha dicho|hizo prometer|obligo a prometer|obliga a prometer) (?:que )?no (?:se lo |lo |le |les )?(?:diga|dijera|contara|cuente|contar|decir) (?:nada )?(?:a nadie|a mi (?:mama|madre|papa|padre)|a mis padres|\||,)|es nuestro secreto|si (?:se lo |le |les )?(?:cuento|contaba|cuentas|digo|decia|dices|contara|dijera) (?:a alguien|a nadie|a mi (?:mama|madre|papa|padre)|a mis padres) (?:me|nos|le|te) (?:va a|iba a|pega|pegaria|mata|mataria|hace|haria)`,
		unless: `(?:(?:sobre|de) (?:su|la|el|mi) (?:novio|novia|fiesta|sorpresa|regalo|examen|crush|cumpleanos))`},
	{id: "es.abuse.encierro", cat: CategoryAbuse, sev: SeverityHigh, negInside: true,
		re: `me (?:encierran|encierra|encerraron|encerro|dejan encerrad[oa]|tienen encerrad[oa]|encierran sol[oa]) (?:en|dentro de) (?:mi cuarto|el cuarto|el armario|el sotano|el bano|la casa|mi habitacion|el garaje|un cuarto)|me (?:encierran|encierra|encerraron|encerro|dejan) (?:[a-z]+ ){0,3}sin (?:comida|comer|agua)`},
	{id: "es.abuse.abandono", cat: CategoryAbuse, sev: SeverityHigh,
		re: `no (?:hay|habia) (?:nada de )?comida en (?:casa|mi casa)|(?:nunca hay|no hay nunca) comida|no (?:hay|habia|tenemos) nada (?:de|para) comer en (?:casa|mi casa)|(?:no|nunca) me dan (?:de comer|comida|nada de comer)|no me dejan comer (?:como castigo|hasta|cuando|si|en todo el dia|por dias|durante dias)|nadie me da de comer|me dejan (?:sol[oa] )?(?:dias|varios dias|todo el fin de semana|una semana|dos dias|tres dias)(?: sol[oa])?|(?:llevo|lleva) (?:dos|tres|cuatro|2|3|4|varios) dias sin comer ~(?:porque no hay|no hay comida|mis padres|nadie)`},
	{id: "es.abuse.casa", cat: CategoryAbuse, sev: SeverityHigh,
		re: `no me siento (?:segur[oa]) en (?:casa|mi casa)|no estoy (?:segur[oa]) en (?:casa|mi casa)|(?:tengo miedo|me da miedo) (?:de )?(?:volver|ir|regresar) a (?:casa|mi casa)`},
	// Spanish: immediate danger.
	{id: "es.danger.pastillas", cat: CategoryDanger, sev: SeverityImminent,
		re: `(?:me tome|me he tomado|acabo de tomar|me acabo de tomar|tome) (?:un bote de|todo el bote de|todas (?:las|mis)|muchas|un monton de|[0-9]+) ~(?:pastillas|pildoras|medicamentos|medicinas|calmantes)`},
	{id: "es.danger.amenaza", cat: CategoryDanger, sev: SeverityImminent,
		re: `(?:me amenaza|me amenazo|me esta amenazando) con (?:matarme|pegarme|hacerme dano|apunalarme)|(?:alguien|un hombre|un tipo|unos hombres) (?:ha entrado|entro|esta entrando|se ha metido) en (?:mi casa|casa|nuestra casa)|(?:esta|estan) intentando (?:matarme|violarme)`},
	// Spanish: concern for someone else.
	{id: "es.other.matarse", cat: CategoryConcernOther, sev: SeverityConcern, negatable: true,
		re:   `(?:matarse|suicidarse|quitarse la vida|autolesionarse|ahorcarse|envenenarse|desvivirse)|se (?:quiere|va a|piensa|quiso|intento|decidio|decide|iba a) (?:matar|suicidar|quitar la vida|ahorcar|envenenar|desvivir)|se (?:suicida|suicido|suicidaron|suicidan|ahorca|ahorco|ahorcaron|envenena|envenenan|envenenaron|quita la vida|quito la vida|quitaron la vida|clava un punal|clavo un punal)|` + otherES + ` ~(?:se corta|se autolesiona|se hace dano|se esta cortando)|` + otherES + ` ~(?:quiere|quiera) morir(?:se)?`,
		whom: whomThird, unless: hyperboleES},
	{id: "es.other.le_pega", cat: CategoryConcernOther, sev: SeverityConcern, negInside: true,
		re: `a ` + otherES + ` (?:su|sus) (?:padre|madre|padrastro|padres|tio) (?:le pega|la pega|lo pega|le golpea|la golpea|lo golpea|la maltrata|lo maltrata|la toca|lo toca|la manosea|lo manosea|abusa de ella|abusa de el|la encierra|lo encierra)`},

	// Output, English: instructions.
	{id: "en.output.method", cat: CategorySelfHarmInstructions, sev: SeverityHigh, stage: StageOutput, negatable: true,
		re: `(?:painless|easiest|best|quickest|most effective|surest) (?:way|method|ways|methods) to (?:kill yourself|die|end your life|commit suicide|overdose)|(?:lethal|fatal|deadly) (?:dose|amount) (?:of|is)|(?:how|here is how|heres how) to (?:kill yourself|hang yourself|overdose|cut yourself|slit your)|(?:make|tie|tying|making) a noose|(?:cut|slit|slice) (?:along |across )?(?:your|the) (?:wrists?|veins|arteries|throat)|(?:you could|you can|you should|try to|just) (?:hang yourself|overdose|slit your|jump off)`},
	// Output, English: encouragement.
	{id: "en.output.encourage", cat: CategorySelfHarmEncouragement, sev: SeverityHigh, stage: StageOutput, negatable: true,
		re: `(?:you should|go ahead and|why dont you|just) (?:just )?(?:kill yourself|end it|die)|(?:everyone|everybody|the world|your family) (?:would|will) be better (?:off )?without you|(?:nobody|no one) (?:would|will) (?:even )?miss you`},
	// Output, Spanish: instructions.
	{id: "es.output.method", cat: CategorySelfHarmInstructions, sev: SeverityHigh, stage: StageOutput, negatable: true,
		re: `(?:forma|manera|metodo|modo) (?:mas )?(?:facil|rapida|rapido|segura|seguro|indolora|indoloro)? ?(?:de|para) (?:suicidarte|matarte|quitarte la vida|ahorcarte|morir)|(?:como|para) (?:suicidarte|ahorcarte|cortarte las venas)|(?:cortate|corta|cortarte) (?:las venas|las munecas)|dosis (?:letal|mortal)|(?:tirate|lanzate|puedes tirarte|podrias tirarte) (?:de|desde|por)`},
	// Output, Spanish: encouragement.
	{id: "es.output.encourage", cat: CategorySelfHarmEncouragement, sev: SeverityHigh, stage: StageOutput, negatable: true,
		re: `(?:deberias|tienes que|podrias|simplemente) (?:matarte|suicidarte|morirte|quitarte la vida)|(?:todos|todo el mundo|tu familia|el mundo) (?:estarian|estaria) mejor sin ti|nadie te (?:extranaria|echaria de menos)`},
}

// relationMarkers, anywhere in a text, name someone of the learner's own ("my brother", "mi
// amiga"): a learner asking why someone died may say who it was only in the next sentence
// ("Why did he kill himself? He was my brother"). personalMarkers, in the sentence of a
// third-person match, name someone the learner knows in other words.
var relationMarkers = regexp.MustCompile(` (?:my|mi|mis) (?:friend|friends|best friend|bff|brother|sister|cousin|classmate|boyfriend|girlfriend|teammate|roommate|mom|mum|dad|mother|father|uncle|aunt|neighbor|neighbour|amiga|amigo|amigas|amigos|mejor amiga|mejor amigo|hermano|hermana|prima|primo|companera|companero|novio|novia|mama|papa|madre|padre|tio|tia|vecina|vecino) `)

var personalMarkers = regexp.MustCompile(` (?:someone i know|somebody i know|a friend|a (?:girl|boy|kid|guy) (?:in|from|at) my|someone (?:in|from|at) my|told me|texted me|messaged me|tells me|said to me|keeps saying|(?:she|he|they) (?:said|says|told|texted)|im worried|i am worried|im scared|me dijo|me conto|me escribio|me mando|me dice|alguien que conozco|una amiga|un amigo|una companera|un companero|una chica de mi|un chico de mi|estoy preocupad[oa]) `)

// topicMarkers, anywhere in a text, make a third-person match a topic of study: works and
// characters, history, debate, biology, games, and people in general rather than a person.
var topicMarkers = regexp.MustCompile(` (?:character|characters|protagonist|narrator|author|poet|writer|novel|book|play|poem|story|chapter|scene|film|movie|series|episode|tragedy|shakespeare|romeo|juliet|ophelia|hamlet|macbeth|othello|desdemona|cleopatra|antony|brutus|cassius|karenina|bovary|javert|jocasta|antigone|dido|lucretia|seneca|socrates|judas|werther|ajax|hitler|nero|hemingway|plath|woolf|van gogh|cobain|turing|samurai|seppuku|kamikaze|history|historical|century|war|ww2|wwii|emperor|empress|king|queen|pharaoh|soldiers|ancient|roman|romans|debate|motion|essay|argue|argument|allowed|legal|legalized|law|laws|euthanasia|assisted|terminally|patients|ethics|ethical|moral|morally|cell|cells|apoptosis|bacteria|virus|organism|organisms|immune|neuron|neurons|tissue|enzyme|mitochondria|protein|plants|animals|insects|bees|species|octopus|salmon|lemmings|scorpion|scorpions|game|games|video game|minecraft|fortnite|roblox|sims|npc|avatar|people|someone who|a person|teens|teenagers|humans|why do people|personaje|personajes|protagonista|narrador|autor|autora|poeta|novela|libro|obra|poema|cuento|capitulo|escena|acto|pelicula|serie|tragedia|julieta|ofelia|melibea|calisto|celestina|adela|bernarda|yerma|bodas de sangre|werther|larra|quiroga|alfonsina|storni|violeta parra|historia|historico|historica|siglo|guerra|rey|reina|emperador|faraon|soldados|antigua|romanos|debate|mocion|ensayo|argumentar|deberian|deberia|permitir|permitirles|permitido|legal|legalizar|ley|eutanasia|asistido|enfermos terminales|pacientes|etica|moral|celula|celulas|apoptosis|bacterias|organismo|tejido|proteina|mitocondria|abejas|animales|especie|especies|pulpo|salmon|escorpion|escorpiones|bruto|julio cesar|cesar|juego|videojuego|videojuegos|partida|jugador|nivel|la gente|las personas|una persona|alguien que|los adolescentes|por que la gente|why did|why does|why do|why would|how did|por que|que llevo a|paramo) `)

// topicFramesAfter and topicFramesBefore are topicAfter and topicBefore compiled, anchored at
// the end and the start of a match.
var (
	topicFramesAfter  = regexp.MustCompile(`^` + topicAfter + ` `)
	topicFramesBefore = regexp.MustCompile(` ` + topicBefore)
)

// classFrames, anywhere in a text, put a worry about "a friend" in a class exercise ("how do you
// help a friend who is self-harming? it's for health class"); ownMarkers, in the sentence, name
// someone of the learner's own, which no class frame outweighs.
var (
	classFrames = regexp.MustCompile(` (?:(?:for|in|from) (?:health|psychology|sociology|biology|ethics|english|history|literature|pshe|wellness) class|health class|for (?:our|my|a|the) (?:project|essay|presentation|debate|report|assignment|worksheet)|how do you help|warning signs|(?:para|en|de) (?:la )?clase de (?:salud|psicologia|sociologia|biologia|etica|lengua|literatura|historia|tutoria)|para (?:mi|el|un|nuestro|nuestra|la) (?:trabajo|proyecto|ensayo|debate|exposicion|tarea)|senales de alerta|como se ayuda) `)
	ownMarkers  = regexp.MustCompile(` (?:my|mi|mis|told me|texted me|me dijo|me conto|me escribio) `)
)
